#include "pix2pix/interop/torch_save_reader.hpp"

#include <caffe2/serialize/inline_container.h>

#include <cstdio>
#include <set>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"

namespace pix2pix::interop {
namespace {

// Where the opcode at `at` ends: pickle protocols 0-2, which torch.save writes (protocol 2).
std::size_t opcode_end(const std::string& p, std::size_t at, const std::string& what) {
  const auto need = [&](std::size_t end) {
    if (end > p.size()) throw Error(what + ": its pickle ends inside an opcode (truncated)");
    return end;
  };
  const auto length_at = [&](std::size_t from, int bytes) {
    need(from + static_cast<std::size_t>(bytes));
    std::uint64_t n = 0;
    for (int i = bytes - 1; i >= 0; --i)
      n = (n << 8) | static_cast<unsigned char>(p[from + static_cast<std::size_t>(i)]);
    return static_cast<std::size_t>(n);
  };
  const auto line_end = [&](std::size_t from) {
    const auto newline = p.find('\n', from);
    if (newline == std::string::npos) throw Error(what + ": its pickle ends inside an opcode (truncated)");
    return newline + 1;
  };
  const unsigned char code = static_cast<unsigned char>(p[at]);
  switch (code) {
    case '(':
    case '.':
    case '0':
    case '1':
    case '2':
    case 'N':
    case 'R':
    case 'a':
    case 'b':
    case 'd':
    case '}':
    case 'e':
    case 'l':
    case ']':
    case 'o':
    case 's':
    case 't':
    case ')':
    case 'u':
    case 'Q':
    case 0x81:
    case 0x85:
    case 0x86:
    case 0x87:
    case 0x88:
    case 0x89:
      return at + 1;
    case 'K':
    case 'h':
    case 'q':
    case 0x80:
    case 0x82:
      return need(at + 2);
    case 'M':
    case 0x83:
      return need(at + 3);
    case 'J':
    case 'j':
    case 'r':
    case 0x84:
      return need(at + 5);
    case 'G':
      return need(at + 9);
    case 'U':
    case 'C':
    case 0x8a:
      return need(at + 2 + length_at(at + 1, 1));
    case 'T':
    case 'X':
    case 'B':
    case 0x8b:
      return need(at + 5 + length_at(at + 1, 4));
    case 'I':
    case 'L':
    case 'F':
    case 'S':
    case 'V':
    case 'P':
      return line_end(at + 1);
    case 'c':
    case 'i':
      return line_end(line_end(at + 1));
    default:
      throw Error(what + ": pickle opcode 0x" +
                  [&] {
                    char hex[3];
                    std::snprintf(hex, sizeof hex, "%02x", code);
                    return std::string(hex);
                  }() +
                  " at byte " + std::to_string(at) + " is not one torch.save writes (protocol 2)");
  }
}

// The memo index a BINPUT/LONG_BINPUT stores to or a BINGET/LONG_BINGET reads (-1: another opcode).
std::int64_t memo_index(const std::string& p, std::size_t at) {
  const char code = p[at];
  if (code == 'q' || code == 'h') return static_cast<unsigned char>(p[at + 1]);
  if (code == 'r' || code == 'j') {
    std::uint32_t n = 0;
    for (int i = 3; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(p[at + 1 + static_cast<std::size_t>(i)]);
    return n;
  }
  return -1;
}

bool consumes_mark(char code) {
  return code == 't' || code == 'l' || code == 'd' || code == 'e' || code == 'u' || code == '1' || code == 'o' ||
         code == 'i';
}

}  // namespace

std::string pickle_without_ordered_dicts(const std::string& p, const std::string& what) {
  static const std::string kOrderedDict = "ccollections\nOrderedDict\n";
  std::string out;
  out.reserve(p.size());
  std::set<std::int64_t> ordered_dict_memos;  // where the OrderedDict class was memoised
  bool top_is_ordered_dict = false, top_made = false, in_state = false;
  std::size_t state_start = 0, previous_op = 0;
  int depth = 0;          // open MARKs
  std::int64_t puts = 0;  // memo entries stored so far: Python numbers them 0, 1, 2, ...
  // LibTorch's memo is a vector sized by the largest index a pickle names: an index beyond what
  // Python could have written would allocate without bound. (The text PUT and GET, which name
  // indices in decimal, are refused as opcodes torch.save does not write.)
  const auto store_memo = [&](std::size_t put_at) {
    if (memo_index(p, put_at) > puts)
      throw Error(what + ": its pickle stores memo entry " + std::to_string(memo_index(p, put_at)) + " after only " +
                  std::to_string(puts) + " (damaged)");
    ++puts;
  };
  std::size_t at = 0;
  while (at < p.size()) {
    std::size_t end = opcode_end(p, at, what);
    const char code = p[at];
    if (code == 'q' || code == 'r') store_memo(at);
    if ((code == 'h' || code == 'j') && memo_index(p, at) >= puts)
      throw Error(what + ": its pickle reads memo entry " + std::to_string(memo_index(p, at)) +
                  " before storing it (damaged)");
    // OrderedDict (the class, by name or from the memo) called with no arguments → {}.
    const bool names_class = p.compare(at, kOrderedDict.size(), kOrderedDict) == 0;
    const bool gets_class = (code == 'h' || code == 'j') && ordered_dict_memos.count(memo_index(p, at));
    if (names_class || gets_class) {
      std::size_t next = end;
      if (names_class && next < p.size() && (p[next] == 'q' || p[next] == 'r')) {
        const std::size_t put_end = opcode_end(p, next, what);  // checks the index is there to read
        store_memo(next);
        ordered_dict_memos.insert(memo_index(p, next));
        next = put_end;
      }
      if (next + 1 >= p.size() || p[next] != ')' || p[next + 1] != 'R')
        throw Error(what + ": an OrderedDict with arguments in its pickle (not a state dict torch.save wrote)");
      if (!top_made) top_is_ordered_dict = true;
      top_made = true;
      out += '}';
      previous_op = at;
      at = next + 2;
      continue;
    }
    if (code == '.') {  // STOP
      if (in_state) {
        if (p[previous_op] != 'b')
          throw Error(what + ": its state dict's attributes are not where torch.save puts them");
        out.resize(state_start);
      }
      out += '.';
      return out;
    }
    if (code != static_cast<char>(0x80)) {
      // The top-level OrderedDict's items come as MARK ... SETITEMS groups at depth 0; whatever
      // else starts at depth 0 after it is its state ({'_metadata': ...}), which BUILD applies.
      const bool memo_of_top = (code == 'q' || code == 'r') && depth == 0;
      if (top_is_ordered_dict && !in_state && depth == 0 && code != '(' && !memo_of_top) {
        in_state = true;
        state_start = out.size();
      }
      if (!top_made && code != '(') top_made = !memo_of_top;
    }
    if (code == '(') ++depth;
    if (consumes_mark(code) && --depth < 0) throw Error(what + ": its pickle closes a MARK it never opened");
    out.append(p, at, end - at);
    previous_op = at;
    at = end;
  }
  throw Error(what + ": its pickle has no STOP (truncated)");
}

StateDict read_torch_state_dict(const std::string& path) {
  require_readable_file(path, "state dict");
  c10::IValue loaded;
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    if (!reader.hasRecord("data.pkl")) throw Error(path + " holds no data.pkl: not a file torch.save wrote");
    // The archive again, with the pickle LibTorch can read (See Note [OrderedDict state dicts]).
    std::vector<char> archive;
    caffe2::serialize::PyTorchStreamWriter writer([&archive](const void* data, std::size_t n) {
      archive.insert(archive.end(), static_cast<const char*>(data), static_cast<const char*>(data) + n);
      return n;
    });
    for (const auto& name : reader.getAllRecords()) {
      if (name == "version" || name == ".data/version") continue;  // the writer writes its own
      auto [data, size] = reader.getRecord(name);
      if (name == "data.pkl") {
        const std::string pickle =
            pickle_without_ordered_dicts(std::string(static_cast<const char*>(data.get()), size), path);
        writer.writeRecord(name, pickle.data(), pickle.size());
      } else {
        writer.writeRecord(name, data.get(), size);
      }
    }
    writer.writeEndOfFile();
    loaded = torch::pickle_load(archive);
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    throw Error(path + " is not a state dict torch.save wrote (a zip archive): " + e.what_without_backtrace());
  } catch (const std::exception& e) {  // the unpickler's own checks (std::out_of_range, ...)
    throw Error(path + " is not a state dict torch.save wrote (damaged pickle): " + e.what());
  }
  if (!loaded.isGenericDict()) throw Error(path + " holds a " + loaded.tagKind() + ", not a dict of names to tensors");
  StateDict state;
  for (const auto& entry : loaded.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor())
      throw Error(path + " holds an entry that is not a name and a tensor (" + entry.key().tagKind() + " → " +
                  entry.value().tagKind() + ")");
    const torch::Tensor& t = entry.value().toTensor();
    // A tensor is a view of its storage with the sizes and strides the pickle names, which LibTorch
    // does not check against the storage: one reaching beyond it would read foreign memory.
    __int128 last = t.storage_offset();  // wide: hostile sizes times strides must not wrap around
    bool fits = last >= 0;
    for (std::int64_t d = 0; d < t.dim() && t.numel() > 0; ++d) {
      fits = fits && t.size(d) >= 0 && t.stride(d) >= 0;
      last += static_cast<__int128>(t.size(d) - 1) * t.stride(d);
    }
    if (!fits || (t.numel() > 0 && (last + 1) * t.element_size() > static_cast<__int128>(t.storage().nbytes())))
      throw Error(path + ": tensor " + entry.key().toStringRef() + " reaches beyond its storage (damaged)");
    state.emplace_back(entry.key().toStringRef(), t);
  }
  return state;
}

}  // namespace pix2pix::interop
