#!/usr/bin/env bash
# The second CI leg (docs/platforms.md): the same configure -> build -> ctest as scripts/test.sh, inside a
# Debian 13 ("trixie") root: GCC 14, LibTorch 2.6, Open MPI 5, HDF5 1.14, OpenCV 4.10, with the host's
# /usr/local/cuda bind-mounted so that the GPU-only sources compile and link there too.
#
# The root, its build folder and its compiler cache live in one cache folder outside the checkout
# ($PIX2PIX_DEBIAN13_CACHE, default /var/cache/pix2pix/debian13) and are reused while the package list
# below is unchanged; a changed list builds a fresh root. Needs root (debootstrap, chroot, mounts) and
# Debian's archive: without either it fails, it never passes quietly.
# Usage: scripts/test-debian13.sh [--root-only]   (--root-only: make or check the cached root, nothing else;
# scripts/test.sh runs that in the background while the Debian 12 leg builds)
set -euo pipefail
root_only=false
case "${1:-}" in
  "") ;;
  --root-only) root_only=true ;;
  *) echo "usage: $0 [--root-only]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
checkout="$PWD"
cache="${PIX2PIX_DEBIAN13_CACHE:-/var/cache/pix2pix/debian13}"
root="$cache/root"
suite=trixie

packages=(
  g++ cmake make pkg-config ccache ca-certificates
  libtorch-dev libopenblas0-pthread
  libopenmpi-dev openmpi-bin
  libhdf5-openmpi-dev hdf5-tools python3-h5py
  libopencv-dev libonnx-dev python3-torch python3-scipy chromium-headless-shell
  libboost-program-options-dev libgtest-dev
  dataset-fashion-mnist zlib1g-dev
)
# What the root was made from: a new list (or a root whose making was interrupted) means a new root.
fingerprint="$suite ${packages[*]}"

say() { echo "test-debian13: $*"; }
die() {
  say "error: $*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and bind mounts); run scripts/test.sh as root"
mkdir -p "$cache"
exec 9>"$cache/lock"
flock -w 3600 9 || die "another run holds $cache/lock"

# shellcheck source=scripts/lib/debian_root.sh
. "$checkout/scripts/lib/debian_root.sh"
ensure_root
$root_only && exit 0

mount_system "$root"
mount_in "$root/src" --bind "$checkout"
if [ -d /usr/local/cuda ]; then
  mount_in "$root/usr/local/cuda" --bind /usr/local/cuda
  mount -o remount,bind,ro "$root/usr/local/cuda"
else
  say "no /usr/local/cuda on this machine: the GPU-only sources are not compiled on this leg"
fi

# Note [ccache across fresh clones]: every CI run is a fresh clone, so every source is newer than the
# cached build folder's objects and make recompiles all of them; ccache answers those compilations from
# the cache when the preprocessed source is unchanged. The sloppiness makes the precompiled torch/torch.h
# (rebuilt each time, same content, new time stamps) hit too.
jobs="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"  # nproc honours OMP_NUM_THREADS (scripts/test.sh)
start=$SECONDS
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
  CCACHE_DIR=/var/cache/ccache CCACHE_MAXSIZE=4G CCACHE_BASEDIR=/src \
  CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime \
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  bash -euo pipefail -c "
    cd /src
    cmake -S . -B /var/tmp/pix2pix-build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DCMAKE_CXX_FLAGS=-fpch-preprocess >/var/tmp/pix2pix-configure.log ||
      { cat /var/tmp/pix2pix-configure.log; exit 1; }
    grep -E '^-- (pix2pix|LibTorch|HDF5|OpenCV|CUDA)' /var/tmp/pix2pix-configure.log || true
    ccache --zero-stats >/dev/null
    cmake --build /var/tmp/pix2pix-build -j$jobs
    ccache --show-stats | grep -Ei '^ *(hits|misses)' | head -n 2 || true
    /var/tmp/pix2pix-build/bin/pix2pix --version
    echo 'test-debian13: skipped here: the cluster suite (tests/cluster: a real Slurm and network-namespace hosts run on the Debian 12 leg)'
    ctest --test-dir /var/tmp/pix2pix-build --output-on-failure -j$jobs -E '^cluster[.]'
  "
say "Debian 13 leg passed in $((SECONDS - start)) s"
