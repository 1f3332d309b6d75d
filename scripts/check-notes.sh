#!/usr/bin/env bash
# Checks the Notes of the tracked files (docs/architecture.md, "Notes"):
#   definition: a comment whose text begins with `Note [title]` (after // or #), followed by its
#               text, on that line or the next;
#   reference:  `See Note [title]` anywhere in a comment; in Markdown, any `Note [title]` outside
#               a code span.
# Fails, naming file and line, on a reference to a title nobody defines, on a title defined twice,
# on a `Note [` whose title does not close on its line (Markdown may wrap it once), on a reference
# wrapped between See and Note, on a definition with no text, and on a `Note [title]` in code that
# is neither (a reference says See; a definition begins its comment).
# Usage: check-notes.sh [REPO]   (default: the repository holding this script)
set -euo pipefail
repo="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$repo"
# This script and its test spell the grammar and its mistakes on purpose.
skip=(scripts/check-notes.sh tests/cli/check_notes_test.sh)

# Text files only (-I), `skip` left out. The tracked files of
# a git checkout; elsewhere (an unpacked `git archive`, as on a GPU node) every file but build/.
list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then git ls-files -z
  else find . -path ./build -prune -o -path ./.git -prune -o -type f -printf '%P\0'; fi
}
mapfile -t files < <(list_files | xargs -0 grep -IlF 'Note [' -- 2>/dev/null | grep -vxF -e "${skip[0]}" -e "${skip[1]}" | LC_ALL=C sort || true)
[ "${#files[@]}" -gt 0 ] || { echo "check-notes: no Notes found in $repo" >&2; exit 1; }

awk '
  function comment_text(line) {  # the text after // or #, or "" when the line is no comment
    if (match(line, /^[ \t]*(\/\/|#)[ \t]?/)) return substr(line, RSTART + RLENGTH)
    return ""
  }
  function define(title, at) {
    if (title in defined) problems[++np] = at ": Note [" title "] is defined twice (also " defined[title] ")"
    else defined[title] = at
  }
  FNR == 1 { markdown = (FILENAME ~ /\.md$/); pending = ""; previous = "" }
  {
    # A definition alone on its line is confirmed by the line after it: a comment with text.
    if (pending != "") {
      if (comment_text($0) ~ /[^ \t]/) define(pending, pending_at)
      else problems[++np] = pending_at ": Note [" pending "] has no text after it"
      pending = ""
    }
    text = comment_text($0)
    # A reference wrapped at "See" or at "Note" reads as a definition or as no Note at all.
    if (!markdown && ((substr(text, 1, 6) == "Note [" && previous ~ /See[ \t]*$/) || (text ~ /^\[/ && previous ~ /Note[ \t]*$/)))
      problems[++np] = FILENAME ":" FNR ": a See Note [...] wrapped across two lines: keep it on one"
    previous = text
    rest = $0
    if (markdown) gsub(/`[^`]*`/, "", rest)  # a Note in a code span is an example of the grammar
    if (!markdown && substr(text, 1, 6) == "Note [") {
      rest = text
      close_at = index(rest, "]")
      if (close_at == 0) { problems[++np] = FILENAME ":" FNR ": a Note title that does not close on its line"; next }
      title = substr(rest, 7, close_at - 7); rest = substr(rest, close_at + 1)
      if (rest ~ /^[ \t]*$/) { pending = title; pending_at = FILENAME ":" FNR; next }
      define(title, FILENAME ":" FNR)
    }
    while ((at = index(rest, "Note [")) > 0) {
      before = substr(rest, 1, at - 1); rest = substr(rest, at + 6)
      close_at = index(rest, "]")
      # Prose wraps where it must: in Markdown a title may go on on the next line.
      if (close_at == 0 && markdown && (getline following) > 0) {
        sub(/^[ \t]+/, "", following); rest = rest " " following; close_at = index(rest, "]")
      }
      if (close_at == 0) { problems[++np] = FILENAME ":" FNR ": a Note title that does not close on its line"; break }
      title = substr(rest, 1, close_at - 1); rest = substr(rest, close_at + 1)
      if (markdown || before ~ /See $/) { refs[++nr] = title; ref_at[nr] = FILENAME ":" FNR }
      else problems[++np] = FILENAME ":" FNR ": Note [" title "] is neither a reference (See Note [...]) nor a definition (a comment that begins with it)"
    }
  }
  END {
    for (i = 1; i <= nr; i++)
      if (!(refs[i] in defined)) problems[++np] = ref_at[i] ": See Note [" refs[i] "]: no such Note is defined"
    for (i = 1; i <= np; i++) print problems[i]
    ndef = 0; for (t in defined) ndef++
    if (np > 0) { print "check-notes: " np " problem(s)"; exit 1 }
    print "check-notes: " ndef " Notes, " nr " references, all defined once"
  }
' "${files[@]}"
