# Writes the fixtures of format.npz-scipy: python3 make.py (numpy, scipy).
import io, pickle, zipfile
import numpy as np, scipy.sparse as sp

A = np.array([[0, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1], [1, 0, 0, 0]], dtype=np.float32)
X = np.array([[1, 0, 0], [0, 2.5, 0], [3, 0, 0], [0, 0, -1]], dtype=np.float32)
y = np.array([0, 1, 1, 0])
np.savez("csr.npz", adj_matrix=sp.csr_matrix(A), attr_matrix=sp.csr_matrix(X), labels=y,
         class_names=np.array(["a", "b"], dtype=object))
np.savez_compressed("csc.npz", adj_matrix=sp.csc_matrix(A), attr_matrix=sp.csc_matrix(X), labels=y)
np.savez("dense-attr.npz", adj_matrix=sp.csr_matrix(A.astype(np.int64)), attr_matrix=X, labels=y)
np.savez("dense-adj.npz", adj_matrix=A, labels=y)
np.savez("not-sparse.npz", adj_matrix=np.array([{"a": 1}], dtype=object).reshape(()), labels=y)
Ac, Xc = sp.csr_matrix(A), sp.csr_matrix(X)
np.savez("parts.npz", adj_data=Ac.data, adj_indices=Ac.indices, adj_indptr=Ac.indptr, adj_shape=np.array(Ac.shape),
         attr_data=Xc.data, attr_indices=Xc.indices, attr_indptr=Xc.indptr, attr_shape=np.array(Xc.shape), labels=y)


def npy(p):
    hdr = "{'descr': '|O', 'fortran_order': False, 'shape': (), }"
    hdr = hdr + " " * (118 - len(hdr)) + "\n"
    return b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr.encode() + p


def archive(name, adj):
    with zipfile.ZipFile(name, "w") as z:
        z.writestr("adj_matrix.npy", npy(adj))
        b = io.BytesIO()
        np.save(b, y)
        z.writestr("labels.npy", b.getvalue())


obj = np.empty((), dtype=object)
obj[()] = sp.csr_matrix(A)
archive("csr-proto4.npz", pickle.dumps(obj, protocol=4))


def s4(x):
    return b"X" + len(x.encode()).to_bytes(4, "little") + x.encode()


def s1(x):
    return b"\x8c" + bytes([len(x)]) + x.encode()


cmd = "touch pwned-by-pickle"
archive("os-system.npz", b"\x80\x02cos\nsystem\nq\x00" + s4(cmd) + b"\x85R.")
archive("builtins-eval.npz", b"\x80\x04\x95" + bytes(8) + s1("builtins") + b"\x94" + s1("eval") + b"\x94\x93\x94"
        + s4("open('pwned-by-pickle','w')") + b"\x85R.")
archive("nested-system.npz", b"\x80\x03cscipy.sparse._csr\ncsr_matrix\n)\x81}" + s4("data") + b"cposix\nsystem\n"
        + s4(cmd) + b"\x85Rsb.")
