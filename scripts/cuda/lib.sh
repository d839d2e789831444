# shellcheck shell=bash
# Shared helpers for scripts/cuda/*.sh (sourced, not run).

# Repository root, whatever the caller's directory.
CUDA_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CUDA_BUILD=${CUDA_BUILD:-$CUDA_REPO/build/cuda}

log() { printf '%s\n' "$*" >&2; }
die() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; exit 1; }

# apt_uri PKG: the download URL of PKG's .deb as apt knows it, or nothing.
apt_uri() {
	apt-get download --print-uris "$1" 2>/dev/null | sed -n "s/^'\([^']*\)'.*/\1/p" | head -n 1
}

# deb_uri PKG: the download URL of PKG's .deb. The CUDA packages live in
# Debian's contrib/non-free components, which a fresh machine's sources do not
# list: as root this enables them (and runs apt-get update); otherwise it
# prints the exact commands to run and fails.
deb_uri() {
	local pkg=$1 uri src=/etc/apt/sources.list.d/debian.sources
	uri=$(apt_uri "$pkg")
	if [ -z "$uri" ]; then
		if [ "$(id -u)" -ne 0 ]; then
			log "apt does not know $pkg: Debian's contrib and non-free components are needed. Run:"
			if [ -f "$src" ] && grep -q '^Components: main$' "$src"; then
				log "  sudo sed -i 's/^Components: main\$/Components: main contrib non-free/' $src"
			else
				log "  (add 'contrib non-free' to the Components of your bookworm apt source)"
			fi
			log "  sudo apt-get update"
			return 1
		fi
		if [ -f "$src" ] && grep -q '^Components: main$' "$src"; then
			log "enabling Debian contrib/non-free in $src (for $pkg)"
			sed -i 's/^Components: main$/Components: main contrib non-free/' "$src"
		fi
		log "apt-get update (to find $pkg)"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
		uri=$(apt_uri "$pkg")
		if [ -z "$uri" ]; then
			log "apt still does not know $pkg; enable Debian bookworm's contrib and non-free components and run apt-get update"
			return 1
		fi
	fi
	printf '%s\n' "$uri"
}
