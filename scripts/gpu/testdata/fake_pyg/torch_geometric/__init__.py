"""A stand-in for PyTorch Geometric, for scripts/gpu/selftest.sh only.

It lets pyg_bench.py run end to end on a machine without PyG (the CI
machine has Debian's CPU PyTorch but no PyG). The layers below have PyG's
constructor arguments and parameter shapes and compute the same functions
with plain torch (index_add / scatter_reduce), slowly. Never used on the GPU
machine, where the real PyG 2.x is imported.
"""

__version__ = "0.0+selftest-fake"

from . import nn  # noqa: E402,F401
