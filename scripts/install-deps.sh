#!/usr/bin/env bash
# Installs, with apt-get, exactly the Debian 12 packages pix2pix-mpi needs to build, test and run.
# Idempotent: packages already present are skipped; what gets installed is printed.
# Usage: scripts/install-deps.sh [--runtime]
#   --runtime   only what building pix2pix and running the main job need (launch/quickstart.sh):
#               no test, cluster-lab or second-leg packages
set -euo pipefail

# Building pix2pix and running the main job (prepare, train on 2 ranks, evaluate, translate, export).
runtime=(
  cmake g++ make pkg-config ca-certificates
  libtorch-dev                   # LibTorch 1.13 (CPU); users on clusters bring a CUDA LibTorch 2.x
  libopenblas0-pthread           # Debian's LibTorch runs ConvTranspose2d through the system BLAS (~30x faster)
  libopenmpi-dev openmpi-bin     # MPI (CPU communicator, launch, bootstrap of NCCL)
  libhdf5-openmpi-dev            # parallel HDF5 (also works serially)
  libopencv-dev                  # image decoding and derivations in `prepare`; its DNN module runs exported ONNX in the tests
  libonnx-dev                    # `export --format onnx`: ONNX's protobuf classes and checker
  libboost-program-options-dev   # CLI and INI config files
  dataset-fashion-mnist          # the embedded default data for the main job
  zlib1g-dev                     # IDX .gz reading
  gnuplot-nox                    # the plots of slurm/scaling-study.sh and scripts/batch-study.sh (a run's curves.png needs none)
)
# What the test command (scripts/test.sh) adds.
testing=(
  hdf5-tools                     # h5dump for inspection
  python3-h5py                   # the tests read our files with h5py, as users will
  python3-torch                  # the tests load `export --format pytorch` files into the reference networks in PyTorch
  python3-scipy                  # the FID test recomputes FID with scipy.linalg.sqrtm, as the reference implementations do
  chromium-headless-shell        # the tests render `report --html` in headless Chromium and check every image loaded
  libgtest-dev                   # unit tests
  slurmctld slurmd slurm-client munge  # tests/cluster: a real Slurm (daemons started by the tests, not as services)
  iproute2                       # tests/cluster: veth pairs between network-namespace hosts
  ccache                         # scripts/test.sh: a repeated run answers unchanged compilations from its cache
  debootstrap                    # scripts/test-debian13.sh: the Debian 13 root of the second CI leg
)
case "${1:-}" in
  --runtime) packages=("${runtime[@]}") ;;
  "") packages=("${runtime[@]}" "${testing[@]}") ;;
  *) echo "install-deps: unknown option '$1' (usage: scripts/install-deps.sh [--runtime])" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

report_blas() {
  # Debian's LibTorch runs ConvTranspose2d through whichever libblas.so.3 is selected.
  local blas
  blas="$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | sed -n 's/^Value: //p')"
  case "$blas" in
    *openblas*) echo "install-deps: BLAS is OpenBLAS ($blas)" ;;
    *) echo "install-deps: warning: libblas.so.3 is '${blas:-unknown}', not OpenBLAS; U-Net up-convolutions will be ~30x slower" ;;
  esac
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  report_blas
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
report_blas
