// The child writes one message to the pipe: a status byte (0: strings follow, 1: an error text
// follows), then per string a presence byte, a 64-bit length and the bytes. The parent reads
// until EOF with a deadline, then reaps the child; a child ended by a signal is a damaged file.
#include "pix2pix/data/h5_isolated_read.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/data/h5_io.hpp"

namespace pix2pix::data::h5 {
namespace {

using Strings = std::vector<std::optional<std::string>>;

constexpr int kChildSeconds = 120;                    // a healthy read takes milliseconds
constexpr std::size_t kMaxMessageBytes = 1ULL << 30;  // what the parent accepts from the child

void append_u64(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

std::uint64_t take_u64(const std::string& in, std::size_t& at) {
  if (in.size() - at < 8) throw Error("truncated message");
  std::uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  at += 8;
  return value;
}

void write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

[[noreturn]] void child_main(int fd, const std::string& path, const std::function<Strings(hid_t)>& work) {
  std::string message;
  try {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) throw Error("cannot open: " + last_error_message());
    const Strings strings = work(file);
    message += '\0';
    for (const auto& text : strings) {
      message += text ? '\1' : '\0';
      append_u64(message, text ? text->size() : 0);
      if (text) message += *text;
    }
  } catch (const std::exception& e) {
    message = std::string(1, '\1') + e.what();
  }
  write_all(fd, message);
  _exit(0);  // no atexit handlers, no HDF5 shutdown: the parent owns those
}

// Reads the child's message until EOF, at most `deadline`; false on timeout or overflow.
bool read_message(int fd, std::chrono::steady_clock::time_point deadline, std::string& message) {
  char buffer[1 << 16];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // EOF (or an error, which the exit status explains)
    message.append(buffer, static_cast<std::size_t>(n));
    if (message.size() > kMaxMessageBytes) return false;
  }
}

Strings run_isolated(const std::string& path, const std::string& what, std::size_t expected,
                     const std::function<Strings(hid_t)>& work) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw Error(path + ": " + what + ": cannot create a pipe: " + std::strerror(errno));
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw Error(path + ": " + what + ": cannot fork the isolated reader: " + std::strerror(errno));
  }
  if (child == 0) {
    ::close(pipe_fds[0]);
    child_main(pipe_fds[1], path, work);
  }
  ::close(pipe_fds[1]);
  std::string message;
  const bool complete =
      read_message(pipe_fds[0], std::chrono::steady_clock::now() + std::chrono::seconds(kChildSeconds), message);
  ::close(pipe_fds[0]);
  if (!complete) ::kill(child, SIGKILL);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string where = path + ": " + what + ": ";
  if (WIFSIGNALED(status) && complete)
    throw Error(where + "the isolated reader crashed (signal " + std::to_string(WTERMSIG(status)) + ", " +
                strsignal(WTERMSIG(status)) +
                "): the file's variable-length string storage (HDF5 global heap) is damaged");
  if (!complete)
    throw Error(where + "the isolated reader did not finish within " + std::to_string(kChildSeconds) +
                " s or sent too much: the file is damaged");
  if (message.empty()) throw Error(where + "the isolated reader ended without an answer: the file is damaged");
  if (message[0] == '\1') throw Error(where + message.substr(1));
  Strings strings;
  try {
    std::size_t at = 1;
    while (at < message.size()) {
      const bool present = message[at++] == '\1';
      const std::uint64_t length = take_u64(message, at);
      if (message.size() - at < length) throw Error("truncated message");
      strings.push_back(present ? std::optional<std::string>(message.substr(at, length)) : std::nullopt);
      at += length;
    }
  } catch (const Error& e) {
    throw Error(where + "the isolated reader's answer is malformed: " + e.what());
  }
  if (strings.size() != expected)
    throw Error(where + "the isolated reader sent " + std::to_string(strings.size()) + " strings, not " +
                std::to_string(expected));
  return strings;
}

}  // namespace

std::vector<std::optional<std::string>> read_variable_string_attributes_isolated(
    const std::string& path, const std::vector<std::string>& names) {
  return run_isolated(path, "root attributes", names.size(), [&](hid_t file) {
    Strings values;
    for (const std::string& name : names) values.push_back(read_variable_string_attribute(file, name));
    return values;
  });
}

std::vector<std::string> read_variable_strings_isolated(const std::string& path, const std::string& dataset,
                                                        const std::vector<std::int64_t>& rows) {
  const Strings strings = run_isolated(path, dataset, rows.size(), [&](hid_t file) {
    Handle d = take_dataset(H5_CHECK(H5Dopen2(file, dataset.c_str(), H5P_DEFAULT)));
    Handle file_type = take_type(H5_CHECK(H5Dget_type(d.get())));
    if (H5Tget_class(file_type.get()) != H5T_STRING || H5_CHECK(H5Tis_variable_str(file_type.get())) <= 0)
      throw Error("not a variable-length string dataset");
    Handle type = variable_string_type(H5Tget_cset(file_type.get()));
    std::vector<char*> raw(rows.size(), nullptr);
    read_rows(d.get(), type.get(), contiguous_runs(rows), raw.data(), sizeof(char*));
    Strings values;
    for (char* text : raw) {
      values.emplace_back(text != nullptr ? std::string(text, strnlen(text, format::kMaxNameBytes)) : std::string());
      H5free_memory(text);
    }
    return values;
  });
  std::vector<std::string> texts;
  for (const auto& s : strings) texts.push_back(s.value_or(""));
  return texts;
}

}  // namespace pix2pix::data::h5
