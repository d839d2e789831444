#!/usr/bin/env bash
# Puts the CUDA 11.8 headers (Debian bookworm's nvidia-cuda-dev, non-free)
# under DEST/usr/include, default build/cuda/hdr. Only ./usr/include of the
# 774 MB .deb is needed; it is the first ~0.84 MB of its data.tar.xz, so
# fetch-headers.py streams that much and stops. Skips when already present.
#   usage: scripts/cuda/fetch-headers.sh [DEST]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
DEST=${1:-$CUDA_BUILD/hdr}
WANT='#define CUDA_VERSION 11080'

check() { grep -qx "$WANT" "$DEST/usr/include/cuda.h" 2>/dev/null && [ -f "$DEST/usr/include/cublas_v2.h" ]; }

if check; then
	exit 0
fi
if [ -e "$DEST/usr/include/cuda.h" ]; then
	die "$DEST/usr/include/cuda.h is not CUDA 11.8 ($WANT missing); remove $DEST and rerun"
fi
command -v python3 >/dev/null || die "python3 is needed (apt-get install python3)"
uri=$(deb_uri nvidia-cuda-dev) || exit 1
case $uri in
	*nvidia-cuda-dev_11.8.*) ;;
	*) die "apt offers $uri, expected nvidia-cuda-dev 11.8 (Debian bookworm non-free)" ;;
esac
python3 "$(dirname "$0")/fetch-headers.py" "$uri" "$DEST"
check || die "$DEST/usr/include/cuda.h lacks '$WANT'"
log "CUDA headers: $DEST/usr/include ($(grep -x "$WANT" "$DEST/usr/include/cuda.h"))"
