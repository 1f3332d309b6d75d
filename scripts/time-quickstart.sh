#!/usr/bin/env bash
# Times the README's first command on a fresh Debian 12: a bare debootstrap root (minbase: apt, bash,
# coreutils; made once and cached, then copied, so every timing starts from the same bare system)
# gets a copy of this checkout at /src and runs `bash launch/quickstart.sh` in it, as root. Packages
# come from the host's Debian archive, as on a new machine. Prints the quickstart's own phase times
# (packages, build, data, training, done) and the total; docs/performance.md ("Build and test") quotes them.
# Needs root (debootstrap, chroot, mounts).
# Usage: scripts/time-quickstart.sh [--root-only] [RANKS]   (--root-only: make the bare root, time nothing)
set -euo pipefail
checkout="$(cd "$(dirname "$0")/.." && pwd)"
root_only=false
if [ "${1:-}" = --root-only ]; then root_only=true; shift; fi
ranks="${1:-2}"
say() { echo "time-quickstart: $*"; }
die() { echo "time-quickstart: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and bind mounts)"
cache="${PIX2PIX_QUICKSTART_CACHE:-/var/cache/pix2pix/debian12-bare}"
root="$cache/root"
suite=bookworm
packages=()  # bare: nothing beyond debootstrap's minbase
fingerprint="bare $suite minbase"
mkdir -p "$cache"
exec 9>"$cache/lock"
flock -w 3600 9 || die "another run holds $cache/lock"
# shellcheck source=scripts/lib/debian_root.sh
. "$checkout/scripts/lib/debian_root.sh"
ensure_root
$root_only && exit 0

machine="$cache/machine"  # this timing's fresh machine: a copy of the bare root
rm -rf --one-file-system "$machine"
cp -a "$root" "$machine"
mkdir -p "$machine/src"
git -C "$checkout" ls-files -z | (cd "$checkout" && tar --null -T - -cf -) | tar -xf - -C "$machine/src"
cp /etc/resolv.conf "$machine/etc/resolv.conf"
mount_system "$machine"
# The host's /usr/local/cuda is not mounted: a new CPU machine has none.
say "running launch/quickstart.sh with $ranks ranks in a bare Debian $suite ($(git -C "$checkout" rev-parse --short HEAD))"
start=$SECONDS
status=0
chroot "$machine" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 RANKS="$ranks" \
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  bash -c "cd /src && bash launch/quickstart.sh --force" >"$cache/quickstart.log" 2>&1 || status=$?
grep -E '^quickstart:|^install-deps:|^stopped|^epoch .*smoothed' "$cache/quickstart.log" | tail -n 12 || true
say "the quickstart ended with status $status after $((SECONDS - start)) s (log: $cache/quickstart.log)"
unmount_all
rm -rf --one-file-system "$machine"
exit "$status"
