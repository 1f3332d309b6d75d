# Sourced by scripts/test-debian13.sh and scripts/test-gpu-bundle.sh: a cached Debian root made with
# debootstrap, and the mounts a chroot into it needs, undone when the caller exits.
# The caller defines say() and die() and sets cache, root, suite, packages (an array) and
# fingerprint (what the root was made from: a root with another fingerprint is made anew).

# Mounts a killed run left behind (its trap never ran): gone before anything under the cache is touched.
while read -r target; do umount -R -l "$target" 2>/dev/null || true; done < <(
  awk -v c="$cache/" 'index($2, c) == 1 { print $2 }' /proc/mounts | sort -r)

mounted=()
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -R "${mounted[$i]}" 2>/dev/null || umount -R -l "${mounted[$i]}" || true
  done
  mounted=()
}
trap unmount_all EXIT
trap "exit 130" INT
trap "exit 143" TERM  # so that the EXIT trap undoes the mounts of a run that is stopped
mount_in() { # mount_in TARGET MOUNT-ARGS...: mounts and remembers it for the trap.
  local target="$1"
  shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounted+=("$target")
}
mount_system() { # /proc, /sys and /dev of the host inside $1 (rslave: unmounting never reaches the host's).
  mount_in "$1/proc" -t proc proc
  mount_in "$1/sys" --rbind /sys
  mount --make-rslave "$1/sys"
  mount_in "$1/dev" --rbind /dev
  mount --make-rslave "$1/dev"
}

# The archive the host's apt uses (debootstrap's own default where none is named).
archive() {
  sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)$/\1/p; s/^deb[[:space:]]\+\([^[:space:]]*\/debian\)[[:space:]].*/\1/p' \
    /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n 1
}

make_root() {
  local fresh="$cache/root.new"
  rm -rf --one-file-system "$fresh"
  if ! command -v debootstrap >/dev/null; then
    say "installing debootstrap on the host"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; } ||
      die "cannot install debootstrap"
  fi
  say "building a Debian $suite root in $fresh (about 10 minutes)"
  # shellcheck disable=SC2046 # an empty archive() leaves debootstrap's default
  debootstrap --variant=minbase --components=main,contrib "$suite" "$fresh" $(archive) >"$cache/debootstrap.log" 2>&1 ||
    die "debootstrap $suite failed (is Debian's archive reachable?); see $cache/debootstrap.log"
  cp /etc/resolv.conf "$fresh/etc/resolv.conf"
  mount_system "$fresh"
  chroot "$fresh" apt-get update -qq || die "apt-get update inside the root failed"
  DEBIAN_FRONTEND=noninteractive chroot "$fresh" apt-get install -y -qq --no-install-recommends "${packages[@]}" \
    >"$cache/apt.log" 2>&1 || die "installing ${packages[*]} inside the root failed; see $cache/apt.log"
  chroot "$fresh" apt-get clean
  unmount_all
  echo "$fingerprint" >"$fresh/etc/pix2pix-root"
  rm -rf --one-file-system "$root"
  mv "$fresh" "$root"
}

# ensure_root: the cached root, made first when missing or made from another package list.
ensure_root() {
  if [ "$(cat "$root/etc/pix2pix-root" 2>/dev/null)" != "$fingerprint" ]; then
    local start=$SECONDS
    make_root
    say "root ready in $((SECONDS - start)) s"
  else
    say "reusing the Debian $suite root in $root"
  fi
}
