// Files written whole or not at all, every write checked: what a full disk or a read-only folder
// does to an output is an error naming it, never a short or empty file under the final name.
#pragma once

#include <string>
#include <string_view>

namespace pix2pix {

// `bytes` as the whole of `path`: written to a temporary name beside it (".NAME.tmp-PID"), every
// write(2) and the close(2) checked (a full disk shows at one or the other; on NFS often only at
// close), then renamed over `path`. On any failure the temporary is removed, the previous file
// (if any) is untouched, and Error says "cannot write PATH: <reason>" ("No space left on device",
// "Permission denied", ...). `durable`: fsync the file and its folder too (for files a later run
// depends on; an image or a report needs no flush to disk).
void write_file_atomically(const std::string& path, std::string_view bytes, bool durable = false);

// Appends `text` to `path` (created when missing) in one write, checked with the close; on a
// failure the file is cut back to its size before, so no partial line is left, and Error says
// "cannot append to PATH: <reason>". `header`, when not empty, is written first if the file is
// empty. For logs many jobs may append to (a scaling study's CSV): O_APPEND keeps their lines whole.
void append_to_file(const std::string& path, const std::string& text, const std::string& header = "");

}  // namespace pix2pix
