#!/usr/bin/env bash
# scripts/test-gpu-bundle.sh BUNDLE_DIR [--keep] | --root-only
#
# The proof of scripts/gpu-bundle.sh on a machine without a GPU: a bare Debian 13 root that holds
# only what an air-gapped GPU node has — a compiler, CMake, ninja, Python with PyTorch (Debian 13's
# LibTorch 2.6 and python3-torch stand in for the pip wheel) — and none of what the bundle brings (MPI, HDF5, OpenCV, Boost, GoogleTest, ONNX, PNG and JPEG
# headers and tools: checked, the run fails if the root has any). There gpu-node-build.sh builds
# pix2pix-mpi from BUNDLE_DIR alone, with CUDA and NCCL on when this machine has /usr/local/cuda
# (bind-mounted, as in the Debian 13 leg: the GPU-only sources compile and link), and then the CPU
# test suite of that build runs under the bundle's Open MPI. It must pass.
# CI runs it last (scripts/test.sh; about 12 minutes on 2 cores with the bundle and root cached).
# Needs root (debootstrap, chroot, mounts). The root is cached in $PIX2PIX_GPU_BUNDLE_CACHE
# (default /var/cache/pix2pix/gpu-bundle-root); the node folder inside it is made anew each run
# unless --keep (then a rerun reuses its unpacked parts and its build). --root-only makes or checks
# the cached root and nothing else: scripts/test.sh runs that in the background at its start.
set -euo pipefail
bundle="" keep=false root_only=false
usage() {
  echo "usage: $0 BUNDLE_DIR [--keep] (a folder scripts/gpu-bundle.sh wrote) | $0 --root-only" >&2
  exit 2
}
for a in "$@"; do
  case "$a" in
    --keep) keep=true ;;
    --root-only) root_only=true ;;
    -*) usage ;;
    *) bundle="$a" ;;
  esac
done
if $root_only; then
  [ -z "$bundle" ] || usage
else
  [ -n "$bundle" ] && [ -f "$bundle/MANIFEST.tsv" ] || usage
  bundle="$(cd "$bundle" && pwd)"
fi
cd "$(dirname "$0")/.."
checkout="$PWD"
cache="${PIX2PIX_GPU_BUNDLE_CACHE:-/var/cache/pix2pix/gpu-bundle-root}"
root="$cache/root"
suite=trixie
packages=(g++ cmake ninja-build python3 libtorch-dev python3-torch libopenblas0-pthread)
fingerprint="$suite ${packages[*]}"
# What a bare node lacks, so the root must too: the headers, CMake packages and tools of what the
# bundle brings. Debian's LibTorch itself links Open MPI's and ONNX's runtime libraries and its
# CMake package wants protobuf's and zlib's headers (a pip LibTorch needs none of them): those stay,
# and the node build is pointed at the bundle's zlib and builds without ONNX.
forbidden_packages='^(libopenmpi-dev|openmpi-bin|mpich|libmpich-dev|libhdf5.*-dev|hdf5-tools|libopencv.*-dev|libboost.*-dev|libgtest-dev|libgmock-dev|googletest|libonnx-dev|libpng-dev|libjpeg.*-dev)$'
forbidden_headers=(mpi.h hdf5.h opencv4 boost gtest gmock onnx png.h jpeglib.h)
say() { echo "test-gpu-bundle: $*"; }
die() {
  say "error: $*" >&2
  exit 1
}
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and bind mounts)"
mkdir -p "$cache"
exec 9>"$cache/lock"
flock -w 3600 9 || die "another run holds $cache/lock"
# shellcheck source=scripts/lib/debian_root.sh
. "$checkout/scripts/lib/debian_root.sh"
ensure_root
$root_only && exit 0

present="$(chroot "$root" dpkg-query -W -f '${Package}\n' | grep -E "$forbidden_packages" || true)"
for h in "${forbidden_headers[@]}"; do
  present+="$(cd "$root/usr/include" && ls -d "$h" */"$h" 2>/dev/null | sed 's#^#/usr/include/#' || true) "
done
present="$(echo $present)"
[ -z "$present" ] || die "the root is not bare: it has $present; the proof would not show the bundle is enough"
say "the root has none of the bundle's libraries' headers, packages or tools (${forbidden_headers[*]})"
mount_system "$root"
mount_in "$root/bundle" --bind "$bundle"
mount -o remount,bind,ro "$root/bundle"
cuda_note="CUDA/NCCL off: no /usr/local/cuda here"
if [ -d /usr/local/cuda ]; then
  mount_in "$root/usr/local/cuda" --bind /usr/local/cuda
  mount -o remount,bind,ro "$root/usr/local/cuda"
  cuda_note="CUDA/NCCL on: the host's /usr/local/cuda, bind-mounted"
fi
say "$cuda_note"
$keep || rm -rf --one-file-system "$root/var/tmp/pix2pix-node"
jobs="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
# What this leg proves is the bundle: its Open MPI, HDF5, OpenCV, Boost and GoogleTest, built on Debian
# 12, under a project built from it alone. Suites that touch none of them (networks, losses, optimisers,
# trainers in one process, gradient buckets over threads) and CLI suites whose subject is training
# arithmetic compute the same here as in the Debian 13 leg, which runs them with the same LibTorch,
# compiler and CUDA configuration; they are left to that leg (CI's 90 minutes: stop 57 ran past them).
libtorch_only_suites=(Trainer TrainerRecognition CycleGan OneSided ClassifierTrainer GeneratorEma GradientSync
  Worlds/SyncBatchNormAtWorld WorldsAndBuckets/GradientSyncAtWorld Networks ResnetGenerator Classifier ModelShape
  ModelRegistry Losses RecognitionLoss LossScaler NonFinite FusedAdam ChannelsLast DeviceUpdate CapturedStep
  CudaGraphOption FeatureDistance FeatureNetwork ReferenceImport PytorchExport ValFeatures EmaCli TimeToQualityCli
  ChannelsLastCli DeviceUpdateCli CudaGraphCli TrainClassifierCli)
libtorch_only_pattern="^($(IFS='|'; echo "${libtorch_only_suites[*]}"))[.]|^mpi[.]np2[.](scaling_to_quality|aux_classifier|bench_phases)\$|^mpi[.]np[34][.]sync_bn_epoch\$|^docs[.]"
start=$SECONDS
# See scripts/test-debian13.sh for the environment: root may run mpirun only when it says so.
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  bash -euo pipefail -c "
    bash /bundle/gpu-node-build.sh /bundle --node /var/tmp/pix2pix-node --jobs $jobs --python /usr/bin/python3
    . /var/tmp/pix2pix-node/env.sh
    # Issue 46, item 3 (See Note [one C++ runtime] in src/CMakeLists.txt): the record a node sends
    # back traces the link; the first shared input it opens is the C++ runtime's shared file.
    sed -n '/^# the link with --trace/{n;p;q}' /var/tmp/pix2pix-node/link-pix2pix.txt | grep -q 'libstdc++[.]so' ||
      { cat /var/tmp/pix2pix-node/link-pix2pix.txt; echo 'test-gpu-bundle: the traced link does not open libstdc++.so first'; exit 1; }
    echo 'test-gpu-bundle: not run here: tests/cluster (a real Slurm and network hosts: the Debian 12 leg) and'
    echo 'test-gpu-bundle: format.h5py_and_h5dump (h5py and h5dump need an HDF5 in the root, which it must not have),'
    echo 'test-gpu-bundle: mpi.np2.fid_kid (its reference side reads the data with h5py and recomputes FID with SciPy),'
    echo 'test-gpu-bundle: HtmlReport.RendersInChromiumWithEveryImageLoaded (a GPU node has no Chromium),'
    echo \"test-gpu-bundle: and the suites that compute with LibTorch alone: ${libtorch_only_suites[*]}\"
    echo 'test-gpu-bundle: (the Debian 13 leg runs them with the same LibTorch 2.6, GCC 14 and CUDA configuration)'
    ctest --test-dir /var/tmp/pix2pix-node/build --output-on-failure -j$jobs \
      -E '^cluster[.]|^format[.]h5py_and_h5dump$|^mpi[.]np2[.]fid_kid$|^HtmlReport[.]RendersInChromium|$libtorch_only_pattern'
    # See Note [preloading the C++ runtime] (scripts/gpu-node-build.sh): with a stand-in that takes
    # one of libstdc++'s symbols, as pip's LibTorch does, the build says the runtime is split, has
    # env.sh preload libstdc++, and its runtime check passes with that.
    LD_PRELOAD=/var/tmp/pix2pix-node/build/tests/libsplit_runtime_standin.so \\
      bash /bundle/gpu-node-build.sh /bundle --node /var/tmp/pix2pix-node --jobs $jobs --python /usr/bin/python3 \\
      >/var/tmp/pix2pix-node/split-runtime.log 2>&1 || { cat /var/tmp/pix2pix-node/split-runtime.log; exit 1; }
    for said in 'C++ runtime: split' 'one runtime' 'C++ runtime: files, exceptions and HDF5 in one process work'; do
      grep -qF -- \"\$said\" /var/tmp/pix2pix-node/split-runtime.log ||
        { cat /var/tmp/pix2pix-node/split-runtime.log; echo \"test-gpu-bundle: the split runtime: no '\$said'\"; exit 1; }
    done
    grep -q '^export LD_PRELOAD=\"/.*libstdc++.so.6' /var/tmp/pix2pix-node/env.sh ||
      { cat /var/tmp/pix2pix-node/env.sh; echo 'test-gpu-bundle: env.sh does not preload libstdc++'; exit 1; }
    echo 'test-gpu-bundle: a split C++ runtime is said and mended (env.sh preloads libstdc++)'
  "
say "passed in $((SECONDS - start)) s: built from the bundle alone and the CPU suite passed ($cuda_note)"
