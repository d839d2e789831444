// Package numpy holds the dataset formats of numpy files: directories of
// .npy arrays, .npz archives (Shchur's layout, OGB's data.npz, pickled
// scipy.sparse matrices read by a restricted unpickler) and the .npy
// writer. Each is a format.* module (graph.Format) registered from init.
// An OGB data.npz reads its split/ directory through core/graph/formats.
package numpy
