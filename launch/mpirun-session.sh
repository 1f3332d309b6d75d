# shellcheck shell=bash disable=SC2034 # mpirun_session_args is for the launchers that source this
# Sourced by launch/mpirun-local.sh and launch/mpirun-hosts.sh just before they exec mpirun:
# mpirun_session_args holds the mpirun options that give this mpirun a session directory of its own.
# Note [an mpirun's session directory of its own]: Open MPI 4.1's mpirun, starting, removes its
# session directory's top (TMPDIR/ompi.HOST.UID, shared by all of a user's jobs on a host) when it
# finds it empty, as stale, and so can remove it under an mpirun started the same instant that has
# made it and not yet filled it; that one fails in orte_init ("A call to mkdir was unable to create
# the desired directory ... File exists"; orte/mca/ess/hnp/ess_hnp_module.c, before
# orte_session_dir; open-mpi/ompi#8510). Four mpiruns started at once, 40 times, failed so 4 times
# in 160 on a CI-2c (Open MPI 5.0.7's mpirun: 0 in 200). A sweep's lines, an array's tasks, a
# scaling study's points and a user's own loop of launches start together so. Every launcher of
# ours therefore gives its mpirun `--mca orte_top_session_dir DIR`, DIR a new folder (mktemp -d
# under TMPDIR): mpirun, its ranks and the daemons it starts on other nodes make their session
# directories in DIR instead of the shared top (cluster.two_hosts blocks both hosts' shared tops,
# and node2 sees its own TMPDIR, not node1's), and the ranks' TMPDIR stays the user's.
# Who removes DIR: Open MPI 4.1 does when mpirun ends, however it ends (measured: a rank's failure,
# a program that is not there, SIGTERM, SIGINT), except when mpirun is SIGKILLed or refuses its own
# options; so the launchers here may exec mpirun, which keeps its signals and exit status exactly
# mpirun's. What those two leave, the next launch on the host removes: DIR is named
# pix2pix-mpirun.HOST.PID.XXXXXX, PID the launcher's, which exec makes mpirun's, and a launch
# removes this user's folders of this host whose PID no longer runs (a PID taken since by another
# process of the user's keeps its folder until that one ends; HOST keeps a TMPDIR shared between
# nodes from judging another node's PIDs). Open MPI 5 (PRRTE, no such race) ignores the name and
# would leave DIR, so these launchers pass it to Open MPI 4 and older only; the Slurm scripts
# (slurm/train.sbatch, slurm/scaling-study.sh), which wait for mpirun anyway, pass it always and
# remove DIR themselves.
# (Not `orte_local_tmpdir_base`: the ranks of a real MPI program then refuse to start, since mpirun
# also hands them `orte_tmpdir_base`, and 4.1 allows only one of the two.)
mpirun_session_args=()
if mpirun --version 2>/dev/null | grep -qE '^mpirun \(Open MPI\) [1-4]\.'; then
  mpirun_session_prefix="${TMPDIR:-/tmp}/pix2pix-mpirun.$(hostname | cut -d. -f1)."
  for mpirun_session_old in "$mpirun_session_prefix"*; do
    mpirun_session_pid="${mpirun_session_old#"$mpirun_session_prefix"}"
    mpirun_session_pid="${mpirun_session_pid%%.*}"
    [[ "$mpirun_session_pid" =~ ^[0-9]+$ ]] && [ -d "$mpirun_session_old" ] && [ -O "$mpirun_session_old" ] || continue
    kill -0 "$mpirun_session_pid" 2>/dev/null || rm -rf "$mpirun_session_old" 2>/dev/null || true
  done
  mpirun_session_top="$(mktemp -d "$mpirun_session_prefix$$.XXXXXX")" ||
    { echo "$0: cannot make a folder for mpirun's session directory under ${TMPDIR:-/tmp}" >&2; exit 1; }
  mpirun_session_args=(--mca orte_top_session_dir "$mpirun_session_top")
fi
