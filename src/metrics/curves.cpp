// Note [gnuplot as a child]: gnuplot runs as a child process (posix_spawnp, no shell: a run
// directory's name is never parsed as a command) with the script as its argument and its stderr
// in a file whose last line becomes the reason when it fails. The parent polls waitpid with a
// deadline, so a stuck gnuplot costs a run at most the timeout, and retries on EINTR (the
// trainer's signal handlers interrupt waits). Everything is written to temporary names and the
// PNG renamed into place, so a reader never sees half an image.
#include "pix2pix/metrics/curves.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <vector>

#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/metrics/run_directory.hpp"

extern char** environ;

namespace pix2pix::metrics {
namespace {

namespace fs = std::filesystem;

// gnuplot's string literal: double quotes, with backslashes and quotes escaped.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// What the file says of its run: the loss columns the model wrote (metrics.csv's columns follow
// the model), and what early stopping watched: the recognition accuracy when its smoothed column
// holds a value in some row (--es-metric accuracy), the unpaired models' content score when
// val_psnr holds none but val_cycle_psnr (CycleGAN) or val_deviation_psnr (onesided) does (an
// unpaired val split), else val_psnr. The file alone says so, for `report` on any run.
struct CsvFacts {
  std::vector<std::string> losses;
  std::string watched = "val_psnr";
};

CsvFacts read_facts(const fs::path& csv) {
  CsvFacts facts;
  std::ifstream in(csv);
  std::string line;
  if (!std::getline(in, line)) return facts;
  const auto header = csv_fields(line);
  for (const auto& name : header)
    if (name.rfind("loss_", 0) == 0) facts.losses.push_back(name);
  const std::vector<std::string> probed = {"val_recognition_smoothed", "val_psnr", "val_cycle_psnr",
                                           "val_deviation_psnr"};
  std::vector<bool> has_value(probed.size(), false);
  while (std::getline(in, line)) {
    const auto fields = csv_fields(line);
    for (size_t i = 0; i < probed.size(); ++i) {
      const auto column = static_cast<size_t>(std::find(header.begin(), header.end(), probed[i]) - header.begin());
      if (column < fields.size() && !fields[column].empty()) has_value[i] = true;
    }
  }
  if (has_value[0])
    facts.watched = "val_recognition";
  else if (!has_value[1] && has_value[2])
    facts.watched = "val_cycle_psnr";
  else if (!has_value[1] && has_value[3])
    facts.watched = "val_deviation_psnr";
  return facts;
}

// Pixel-distance terms (lambda times an L1: Pix2Pix's loss_G_l1, CycleGAN's cycle and identity
// losses) are an order larger than the adversarial ones: they go on the right axis.
bool weighted_distance(const std::string& loss) {
  for (const char* part : {"_l1", "_cycle", "_idt", "_dev"})
    if (loss.find(part) != std::string::npos) return true;
  return false;
}

std::string script(const fs::path& csv, const fs::path& png, const std::string& title, const CurveMarks& marks,
                   const CsvFacts& facts) {
  const bool recognition = facts.watched == "val_recognition";
  const bool cycle = facts.watched == "val_cycle_psnr", deviation = facts.watched == "val_deviation_psnr";
  std::ostringstream s;
  s << "set terminal pngcairo size 1000,760 noenhanced\n"
    << "set output " << quoted(png.string()) << "\n"
    << "set datafile separator \",\"\n"
    << "set multiplot layout 2,1 title " << quoted(title) << "\n"
    << "set xlabel \"epoch\"\nset grid\nset key top left\n"
    << "set ylabel "
    << quoted(recognition ? "val recognition accuracy of G(A)"
              : cycle     ? "val cycle-reconstruction PSNR (dB)"
              : deviation ? "val deviation PSNR, G(B) vs B (dB)"
                          : "val PSNR (dB)")
    << "\n";
  if (marks.best_epoch >= 0)
    s << "set arrow 1 from " << marks.best_epoch << ", graph 0 to " << marks.best_epoch
      << ", graph 1 nohead dt 2 lc rgb \"dark-green\"\n"
      << "set label 1 \"best " << marks.best_epoch << "\" at " << marks.best_epoch
      << ", graph 0.08 right offset -0.5,0 tc rgb \"dark-green\"\n";
  if (marks.stop_epoch >= 0)
    s << "set arrow 2 from " << marks.stop_epoch << ", graph 0 to " << marks.stop_epoch
      << ", graph 1 nohead dt 3 lc rgb \"dark-red\"\n"
      << "set label 2 \"stop " << marks.stop_epoch << "\" at " << marks.stop_epoch
      << ", graph 0.92 right offset -0.5,0 tc rgb \"dark-red\"\n";
  const std::string data = quoted(csv.string());
  const std::string& watched = facts.watched;
  s << "plot " << data << " using \"epoch\":\"" << watched << "\" with linespoints title "
    << quoted(recognition ? "val recognition"
              : cycle     ? "val cycle PSNR"
              : deviation ? "val deviation PSNR"
                          : "val PSNR")
    << ", " << data << " using \"epoch\":\"" << watched
    << "_smoothed\" with linespoints title \"smoothed (early stopping)\"\n"
    << "unset arrow 1\nunset arrow 2\nunset label 1\nunset label 2\n"
    << "set ylabel \"loss\"\nset y2label \"lambda * L1 terms\"\nset y2tics\nset ytics nomirror\n";
  if (!facts.losses.empty()) {
    s << "plot ";
    for (std::size_t i = 0; i < facts.losses.size(); ++i) {
      const std::string& loss = facts.losses[i];
      const bool right = weighted_distance(loss);
      s << (i ? ", " : "") << data << " using \"epoch\":\"" << loss << "\"" << (right ? " axes x1y2" : "")
        << " with lines title " << quoted(loss + (right ? " (right)" : ""));
    }
    s << "\n";
  }
  s << "unset multiplot\n";
  return s.str();
}

// gnuplot ends its report with the error itself (warnings come first).
std::string last_line_of(const fs::path& path) {
  std::ifstream in(path);
  std::string last;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) last = line;
  return last;
}

// Runs `gnuplot script` with stderr into `errors`; "" on success.
std::string run_gnuplot(const fs::path& script_path, const fs::path& errors, double timeout_seconds) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errors.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::string path = script_path.string();
  char gnuplot[] = "gnuplot";
  char* argv[] = {gnuplot, path.data(), nullptr};
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    return spawned == ENOENT ? "gnuplot not found (apt-get install gnuplot-nox)"
                             : std::string("cannot start gnuplot: ") + std::strerror(spawned);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return std::string("waiting for gnuplot: ") + std::strerror(errno);
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return "gnuplot took longer than " + std::to_string(static_cast<int>(timeout_seconds)) + " s";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  const std::string said = last_line_of(errors);
  return "gnuplot failed" + (said.empty() ? std::string() : ": " + said);
}

// A PNG ends with its IEND chunk: gnuplot does not report a write that failed (a full disk left a
// truncated image, exit status 0), so the file is checked instead.
bool complete_png(const fs::path& path) {
  static constexpr unsigned char kIend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() < 20) return false;
  in.seekg(-12, std::ios::end);
  unsigned char tail[12] = {};
  in.read(reinterpret_cast<char*>(tail), 12);
  return in && std::equal(std::begin(tail), std::end(tail), std::begin(kIend));
}

}  // namespace

std::string draw_curves(const std::string& run_dir, const CurveMarks& marks, double timeout_seconds) {
  fs::path dir = fs::path(run_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "runs/a/"
  const fs::path csv = dir / "metrics.csv", png = dir / "curves.png";
  std::error_code ec;
  if (!fs::is_regular_file(csv, ec)) return csv.string() + " does not exist";
  const fs::path tmp_png = dir / ".curves.png.tmp", tmp_script = dir / ".curves.gp.tmp",
                 tmp_errors = dir / ".curves.err.tmp";
  try {
    write_file_atomically(tmp_script.string(), script(csv, tmp_png, dir.filename().string(), marks, read_facts(csv)));
  } catch (const Error& e) {
    return e.what();  // "cannot write …: No space left on device"
  }
  std::string problem = run_gnuplot(tmp_script, tmp_errors, timeout_seconds);
  if (problem.empty() && !fs::is_regular_file(tmp_png, ec)) problem = "gnuplot wrote no image";
  if (problem.empty() && !complete_png(tmp_png)) problem = "gnuplot's image is incomplete (is the disk full?)";
  if (problem.empty()) {
    fs::rename(tmp_png, png, ec);
    if (ec) problem = "cannot rename to " + png.string() + ": " + ec.message();
  }
  for (const auto& leftover : {tmp_png, tmp_script, tmp_errors}) fs::remove(leftover, ec);
  return problem;
}

}  // namespace pix2pix::metrics
