# shellcheck shell=bash
# Sourced by the shell tests that start mpirun through our launchers.
# See Note [an mpirun's session directory of its own]: the session directory top that all of this
# user's Open MPI 4 processes on this host share (TMPDIR/ompi.HOST.UID), made a file while the
# launchers run, so that an mpirun making its session directory there fails at once ("Not a
# directory") instead of now and then.
# Open MPI 5 has no such top and ignores the file. Not around a bare `mpirun` or a singleton, which
# use the shared top.
#   block_shared_top        makes it a file
#   unblock_shared_top WHAT removes the file; returns 1, naming WHAT, when a launcher's own session
#                           folder (TMPDIR/pix2pix-mpirun.*) was left behind (and removes those)
shared_top="${TMPDIR:-/tmp}/ompi.$(hostname | cut -d. -f1).$(id -u)"
block_shared_top() { rm -rf "$shared_top" && : >"$shared_top"; }
unblock_shared_top() {
  rm -f "$shared_top"
  if compgen -G "${TMPDIR:-/tmp}/pix2pix-mpirun.*" >/dev/null; then
    echo "$1: mpirun's session folders were left: $(echo "${TMPDIR:-/tmp}"/pix2pix-mpirun.*)"
    rm -rf "${TMPDIR:-/tmp}"/pix2pix-mpirun.*
    return 1
  fi
}
