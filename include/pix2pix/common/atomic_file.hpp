// Files written whole or not at all, every write checked: what a full disk or a read-only folder
// does to an output is an error naming it, never a short or empty file under the final name.
#pragma once

#include <string>
#include <string_view>

#include "pix2pix/common/file_beneath.hpp"

namespace pix2pix {

// A new file PATH_PREFIX-PID-RANDOM, created with O_EXCL | O_NOFOLLOW (never an existing name, never
// through a link), its name in `created`; an invalid handle with errno set when it cannot be made.
// See Note [fresh temporary names].
FileHandle create_fresh_file(const std::string& path_prefix, std::string& created);
// PATH_PREFIX-PID-RANDOM, not created: for link(2) and copies made with O_EXCL, which fail rather
// than follow a name that exists.
std::string fresh_name(const std::string& path_prefix);

// `bytes` as the whole of `path`: written to a fresh temporary name beside it
// (".NAME.tmp-PID-RANDOM"), every write(2) and the close(2) checked (a full disk shows at one or
// the other; on NFS often only at close), then renamed over `path`. On any failure the temporary
// is removed, the previous file (if any) is untouched, and Error says "cannot write PATH:
// <reason>" ("No space left on device", "Permission denied", ...). A link at `path` is replaced,
// never written through. `durable`: fsync the file and its folder too (for files a later run
// depends on; an image or a report needs no flush to disk).
void write_file_atomically(const std::string& path, std::string_view bytes, bool durable = false);

// Appends `text` to `path` (created when missing; a FIFO or a device there is refused) in one
// write, checked with the close; on a failure the file is cut back to its size before, so no
// partial line is left, and Error says "cannot append to PATH: <reason>". `header`, when not empty,
// is written first if the file is empty. For logs many jobs may append to (a scaling study's CSV):
// O_APPEND keeps their lines whole. `links`: a link at `path` is refused (a run directory's files:
// See Note [a run directory is untrusted input]) or, for a path the user named (`bench --csv`), followed.
enum class Links { refuse, follow };
void append_to_file(const std::string& path, const std::string& text, const std::string& header = "",
                    Links links = Links::refuse);

}  // namespace pix2pix
