// Note [curves drawn by the program]: curves.png is drawn here with OpenCV's drawing functions and
// encoded in memory. It used to be a gnuplot script with metrics.csv's column names spliced into
// it, and a header cell of a run directory someone else wrote could run a command through it
// (`loss_D" with lines; system("...") #`). Now no interpreter ever sees a run's data: names are
// only labels drawn as pixels and values are parsed numbers (metrics_table.hpp), and a GPU node
// needs no plotting package. The PNG reaches its name through a fresh temporary file renamed over
// it (See Note [fresh temporary names]), so a link planted as curves.png is replaced, not written
// through.
#include "pix2pix/metrics/curves.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/metrics/metrics_table.hpp"

namespace pix2pix::metrics {
namespace {

namespace fs = std::filesystem;
using Points = std::vector<std::pair<double, double>>;

const cv::Scalar kBlack(0, 0, 0), kGrid(225, 225, 225), kAxis(120, 120, 120);
const cv::Scalar kBest(0, 110, 0), kStop(0, 0, 160);  // BGR: dark green, dark red
const cv::Scalar kColours[] = {{180, 119, 31},  {40, 39, 214}, {44, 160, 44},   {14, 127, 255},
                               {189, 103, 148}, {75, 86, 140}, {194, 119, 227}, {127, 127, 127}};
constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;

// What the file says of its run: the loss columns the model wrote (metrics.csv's columns follow
// the model), and what early stopping watched: the recognition accuracy when its smoothed column
// holds a value in some row (--es-metric accuracy), the unpaired models' content score when
// val_psnr holds none but val_cycle_psnr (CycleGAN) or val_deviation_psnr (onesided) does (an
// unpaired val split), else val_psnr. The file alone says so, for `report` on any run.
struct CsvFacts {
  std::vector<std::string> losses;
  std::string watched = "val_psnr";
};

CsvFacts read_facts(const MetricsTable& table) {
  CsvFacts facts;
  for (const auto& name : table.columns)
    if (name.rfind("loss_", 0) == 0) facts.losses.push_back(name);
  if (!table.series("val_recognition_smoothed").empty())
    facts.watched = "val_recognition";
  else if (table.series("val_psnr").empty() && !table.series("val_cycle_psnr").empty())
    facts.watched = "val_cycle_psnr";
  else if (table.series("val_psnr").empty() && !table.series("val_deviation_psnr").empty())
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

// A label as drawn: printable ASCII only (Hershey fonts have nothing else), at most 40 characters.
std::string printable(const std::string& text) {
  std::string out;
  for (const char c : text)
    if (out.size() < 40) out += c >= 0x20 && c < 0x7f ? c : '?';
  return text.size() > 40 ? out + "..." : out;
}

void text(cv::Mat& image, const std::string& words, cv::Point at, const cv::Scalar& colour, double scale = 0.42) {
  cv::putText(image, printable(words), at, kFont, scale, colour, 1, cv::LINE_AA);
}

int text_width(const std::string& words, double scale = 0.42) {
  int baseline = 0;
  return cv::getTextSize(printable(words), kFont, scale, 1, &baseline).width;
}

// Text turned a quarter to the left, centred on `centre` (an axis title).
void vertical_text(cv::Mat& image, const std::string& words, cv::Point centre, const cv::Scalar& colour) {
  const int width = text_width(words) + 4, height = 16;
  cv::Mat flat(height, width, image.type(), cv::Scalar(255, 255, 255));
  text(flat, words, {2, height - 4}, colour);
  cv::Mat turned;
  cv::rotate(flat, turned, cv::ROTATE_90_COUNTERCLOCKWISE);
  cv::Rect where(centre.x - turned.cols / 2, centre.y - turned.rows / 2, turned.cols, turned.rows);
  where &= cv::Rect(0, 0, image.cols, image.rows);
  turned(cv::Rect(0, 0, where.width, where.height)).copyTo(image(where));
}

std::string number_text(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.4g", std::abs(value) < 1e-12 ? 0.0 : value);
  return buffer;
}

// Ticks at 1, 2 or 5 times a power of ten covering [lo, hi], about `count` of them.
std::vector<double> ticks(double lo, double hi, int count) {
  const double raw = (hi - lo) / count, power = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = power * (raw / power < 1.5 ? 1 : raw / power < 3.5 ? 2 : raw / power < 7.5 ? 5 : 10);
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9 && out.size() < 50; t += step) out.push_back(t);
  return out;
}

struct Range {
  double lo = INFINITY, hi = -INFINITY;
  void add(const Points& points, bool x) {
    for (const auto& [px, py] : points) lo = std::min(lo, x ? px : py), hi = std::max(hi, x ? px : py);
  }
  // Never empty: a single value gets a unit around it, a span a margin of 5 % each side (values only).
  Range padded(bool margin) const {
    if (!(hi >= lo)) return {0, 1};
    if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) return {lo - 1, hi + 1};
    const double pad = margin ? 0.05 * (hi - lo) : 0;
    return {lo - pad, hi + pad};
  }
};

struct Line {
  std::string label;
  Points points;
  bool right = false;    // on the right axis
  bool markers = false;  // a dot at each point
};

struct Panel {
  cv::Rect plot;  // the plotting area
  Range x;
};

// Dashes of `on` pixels every `period` along a vertical line.
void dashed_vertical(cv::Mat& image, int x, int top, int bottom, const cv::Scalar& colour, int on, int period) {
  for (int y = top; y < bottom; y += period) cv::line(image, {x, y}, {x, std::min(y + on, bottom)}, colour, 1);
}

void draw_panel(cv::Mat& image, const Panel& panel, const std::vector<Line>& lines, const std::string& y_title,
                const std::string& y2_title, const CurveMarks& marks) {
  const cv::Rect& p = panel.plot;
  Range left, right;
  for (const Line& line : lines) (line.right ? right : left).add(line.points, false);
  const Range ly = left.padded(true), ry = right.padded(true), x = panel.x;
  const auto px = [&](double v) { return p.x + static_cast<int>(std::lround((v - x.lo) / (x.hi - x.lo) * p.width)); };
  const auto py = [&](double v, const Range& y) {
    return p.y + static_cast<int>(std::lround((1 - (v - y.lo) / (y.hi - y.lo)) * p.height));
  };
  for (const double t : ticks(ly.lo, ly.hi, 5)) {
    cv::line(image, {p.x, py(t, ly)}, {p.x + p.width, py(t, ly)}, kGrid, 1);
    text(image, number_text(t), {p.x - 8 - text_width(number_text(t)), py(t, ly) + 4}, kBlack);
  }
  if (right.hi >= right.lo)
    for (const double t : ticks(ry.lo, ry.hi, 5)) {
      cv::line(image, {p.x + p.width, py(t, ry)}, {p.x + p.width + 4, py(t, ry)}, kAxis, 1);
      text(image, number_text(t), {p.x + p.width + 8, py(t, ry) + 4}, kBlack);
    }
  for (const double t : ticks(x.lo, x.hi, 10)) {
    if (std::abs(t - std::round(t)) > 1e-9) continue;  // epochs are whole
    cv::line(image, {px(t), p.y}, {px(t), p.y + p.height}, kGrid, 1);
    text(image, number_text(t), {px(t) - text_width(number_text(t)) / 2, p.y + p.height + 16}, kBlack);
  }
  cv::rectangle(image, p, kAxis, 1);
  text(image, "epoch", {p.x + p.width / 2 - text_width("epoch") / 2, p.y + p.height + 32}, kBlack);
  vertical_text(image, y_title, {p.x - 58, p.y + p.height / 2}, kBlack);
  if (right.hi >= right.lo) vertical_text(image, y2_title, {p.x + p.width + 58, p.y + p.height / 2}, kBlack);
  const auto mark = [&](std::int64_t epoch, const cv::Scalar& colour, int on, int period, const std::string& label,
                        int label_y) {
    if (epoch < 0 || epoch < x.lo || epoch > x.hi) return;
    const int at = px(static_cast<double>(epoch));
    dashed_vertical(image, at, p.y, p.y + p.height, colour, on, period);
    text(image, label + " " + std::to_string(epoch),
         {at - 6 - text_width(label + " " + std::to_string(epoch)), label_y}, colour);
  };
  mark(marks.best_epoch, kBest, 6, 10, "best", p.y + p.height - 10);
  mark(marks.stop_epoch, kStop, 2, 5, "stop", p.y + 16);
  cv::Mat clipped = image(p);  // lines stay inside the plotting area
  const auto colour_of = [](std::size_t i) { return kColours[i % (sizeof(kColours) / sizeof(*kColours))]; };
  int key_width = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const Range& y = lines[i].right ? ry : ly;
    std::vector<cv::Point> points;
    for (const auto& [vx, vy] : lines[i].points) points.emplace_back(px(vx) - p.x, py(vy, y) - p.y);
    if (points.size() > 1) cv::polylines(clipped, points, false, colour_of(i), 2, cv::LINE_AA);
    if (lines[i].markers || points.size() == 1)
      for (const cv::Point& point : points) cv::circle(clipped, point, 3, colour_of(i), cv::FILLED, cv::LINE_AA);
    key_width = std::max(key_width, text_width(lines[i].label));
  }
  // The key, on white over the lines.
  if (!lines.empty())
    cv::rectangle(image, cv::Rect(p.x + 5, p.y + 5, key_width + 44, 16 * static_cast<int>(lines.size()) + 6),
                  cv::Scalar(255, 255, 255), cv::FILLED);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int key_y = p.y + 18 + 16 * static_cast<int>(i);
    cv::line(image, {p.x + 10, key_y - 4}, {p.x + 34, key_y - 4}, colour_of(i), 2, cv::LINE_AA);
    text(image, lines[i].label, {p.x + 40, key_y}, kBlack);
  }
}

cv::Mat draw(const MetricsTable& table, const std::string& title, const CurveMarks& marks) {
  const CsvFacts facts = read_facts(table);
  const bool recognition = facts.watched == "val_recognition";
  const bool cycle = facts.watched == "val_cycle_psnr", deviation = facts.watched == "val_deviation_psnr";
  std::vector<Line> top = {{recognition ? "val recognition"
                            : cycle     ? "val cycle PSNR"
                            : deviation ? "val deviation PSNR"
                                        : "val PSNR",
                            table.series(facts.watched), false, true},
                           {"smoothed (early stopping)", table.series(facts.watched + "_smoothed"), false, true}};
  std::vector<Line> bottom;
  for (const std::string& loss : facts.losses) {
    const bool right = weighted_distance(loss);
    bottom.push_back({loss + (right ? " (right)" : ""), table.series(loss), right, false});
  }
  Range x;
  for (const auto* lines : {&top, &bottom})
    for (const Line& line : *lines) x.add(line.points, true);
  const Range epochs = x.padded(false);

  cv::Mat image(760, 1000, CV_8UC3, cv::Scalar(255, 255, 255));
  text(image, title, {500 - text_width(title, 0.55) / 2, 22}, kBlack, 0.55);
  draw_panel(image, {cv::Rect(90, 40, 820, 300), epochs}, top,
             recognition ? "val recognition accuracy of G(A)"
             : cycle     ? "val cycle-reconstruction PSNR (dB)"
             : deviation ? "val deviation PSNR, G(B) vs B (dB)"
                         : "val PSNR (dB)",
             "", marks);
  draw_panel(image, {cv::Rect(90, 410, 820, 300), epochs}, bottom, "loss", "lambda * L1 terms", {});
  return image;
}

}  // namespace

std::string draw_curves(const std::string& run_dir, const CurveMarks& marks) {
  fs::path dir = fs::path(run_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "runs/a/"
  try {
    const MetricsTable table = read_metrics_table(dir.string());
    if (table.columns.empty() || table.columns.front() != "epoch")
      return (dir / "metrics.csv").string() + ": its first column is not 'epoch' (not a pix2pix metrics file)";
    std::vector<unsigned char> png;
    if (!cv::imencode(".png", draw(table, dir.filename().string(), marks), png)) return "OpenCV cannot encode a PNG";
    write_file_atomically((dir / "curves.png").string(),
                          std::string_view(reinterpret_cast<const char*>(png.data()), png.size()));
  } catch (const Error& e) {
    return e.what();  // "…/metrics.csv: no such file", "cannot write …: No space left on device"
  } catch (const cv::Exception& e) {
    return std::string("drawing failed: ") + e.what();
  }
  return "";
}

}  // namespace pix2pix::metrics
