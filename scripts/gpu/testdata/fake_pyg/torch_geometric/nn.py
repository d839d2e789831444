"""Plain-torch GCNConv, SAGEConv and GATConv with PyG's signatures (selftest only)."""

import math

import torch


def _edges(adj, n):
    """(src, dst) of an edge_index [2, E] or a sparse adj_t (row = target)."""
    if adj.is_sparse_csr:
        coo = adj.to_sparse_coo().coalesce()
        dst, src = coo.indices()
        return src, dst
    return adj[0], adj[1]


def _glorot(t):
    a = math.sqrt(6.0 / (t.size(-2) + t.size(-1)))
    with torch.no_grad():
        t.uniform_(-a, a)


class Linear(torch.nn.Module):
    def __init__(self, i, o, bias=True):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(o, i))
        self.bias = torch.nn.Parameter(torch.zeros(o)) if bias else None
        _glorot(self.weight)

    def forward(self, x):
        return torch.nn.functional.linear(x, self.weight, self.bias)


class GCNConv(torch.nn.Module):
    def __init__(self, in_channels, out_channels, cached=False, add_self_loops=True, normalize=True):
        super().__init__()
        self.lin = Linear(in_channels, out_channels, bias=False)
        self.bias = torch.nn.Parameter(torch.zeros(out_channels))
        self.add_self_loops = add_self_loops

    def forward(self, x, adj):
        n = x.size(0)
        src, dst = _edges(adj, n)
        if self.add_self_loops:
            keep = src != dst
            loop = torch.arange(n, device=x.device)
            src, dst = torch.cat([src[keep], loop]), torch.cat([dst[keep], loop])
        deg = torch.zeros(n, device=x.device).index_add_(0, dst, torch.ones(dst.numel(), device=x.device))
        isq = deg.pow(-0.5).masked_fill(deg == 0, 0)
        w = isq[src] * isq[dst]
        h = self.lin(x)
        out = torch.zeros(n, h.size(1), device=x.device).index_add_(0, dst, h[src] * w[:, None])
        return out + self.bias


class SAGEConv(torch.nn.Module):
    def __init__(self, in_channels, out_channels, aggr="mean"):
        super().__init__()
        assert aggr == "mean"
        self.lin_l = Linear(in_channels, out_channels, bias=True)
        self.lin_r = Linear(in_channels, out_channels, bias=False)

    def forward(self, x, adj):
        n = x.size(0)
        src, dst = _edges(adj, n)
        s = torch.zeros_like(x).index_add_(0, dst, x[src])
        deg = torch.zeros(n, device=x.device).index_add_(0, dst, torch.ones(dst.numel(), device=x.device))
        return self.lin_l(s / deg.clamp(min=1)[:, None]) + self.lin_r(x)


class GATConv(torch.nn.Module):
    def __init__(self, in_channels, out_channels, heads=1, concat=True, negative_slope=0.2, dropout=0.0,
                 add_self_loops=True):
        super().__init__()
        self.h, self.c, self.concat = heads, out_channels, concat
        self.slope, self.dropout, self.add_self_loops = negative_slope, dropout, add_self_loops
        self.lin = Linear(in_channels, heads * out_channels, bias=False)
        self.att_src = torch.nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = torch.nn.Parameter(torch.empty(1, heads, out_channels))
        _glorot(self.att_src)
        _glorot(self.att_dst)
        self.bias = torch.nn.Parameter(torch.zeros(heads * out_channels if concat else out_channels))

    def forward(self, x, adj):
        n = x.size(0)
        src, dst = _edges(adj, n)
        if self.add_self_loops:
            keep = src != dst
            loop = torch.arange(n, device=x.device)
            src, dst = torch.cat([src[keep], loop]), torch.cat([dst[keep], loop])
        z = self.lin(x).view(n, self.h, self.c)
        a_s, a_d = (z * self.att_src).sum(-1), (z * self.att_dst).sum(-1)
        e = torch.nn.functional.leaky_relu(a_s[src] + a_d[dst], self.slope)
        m = torch.full((n, self.h), -float("inf"), device=x.device)
        m = m.scatter_reduce(0, dst[:, None].expand_as(e), e, reduce="amax", include_self=True)
        p = (e - m[dst]).exp()
        s = torch.zeros(n, self.h, device=x.device).index_add_(0, dst, p)
        alpha = torch.nn.functional.dropout(p / s[dst], p=self.dropout, training=self.training)
        out = torch.zeros(n, self.h, self.c, device=x.device).index_add_(0, dst, z[src] * alpha[..., None])
        out = out.reshape(n, self.h * self.c) if self.concat else out.mean(1)
        return out + self.bias
