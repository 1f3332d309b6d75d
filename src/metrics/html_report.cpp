#include "pix2pix/metrics/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <opencv2/imgcodecs.hpp>
#include <sstream>
#include <vector>

#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/file_beneath.hpp"
#include "pix2pix/metrics/metrics_table.hpp"
#include "pix2pix/metrics/time_to_quality.hpp"

namespace pix2pix::metrics {
namespace {

namespace fs = std::filesystem;

// A small text file of the run directory, read beneath it; "" when it does not exist, an Error
// naming it when it is a link, a FIFO, too large... See Note [a run directory is untrusted input].
std::string read_text(const fs::path& dir, const std::string& relative) {
  return read_beneath(dir.string(), relative, kTextFileLimit, /*must_exist=*/false).value_or("");
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string base64(const std::string& bytes) {
  static const char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16 | static_cast<unsigned char>(bytes[i + 1]) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += table[(v >> shift) & 63];
  }
  if (i < bytes.size()) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += table[(v >> 18) & 63];
    out += table[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? table[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// Why `bytes` is not a PNG to embed, or "" when it is one: the signature, a header of sane size
// (a few hundred bytes can claim gigapixels) and a whole decode.
std::string not_a_png(const std::string& bytes) {
  static const std::string kSignature = "\x89PNG\r\n\x1a\n";
  if (bytes.size() < 33 || bytes.compare(0, 8, kSignature) != 0 || bytes.compare(12, 4, "IHDR") != 0)
    return "not a PNG image";
  const auto u32 = [&](std::size_t at) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  if (u32(16) * u32(20) > (std::uint64_t{1} << 26)) return "a PNG of more than 64 Mi pixels (not a sample sheet)";
  try {
    const std::vector<unsigned char> data(bytes.begin(), bytes.end());
    if (cv::imdecode(data, cv::IMREAD_UNCHANGED).empty()) return "not a decodable PNG image";
  } catch (const cv::Exception&) {
    return "not a decodable PNG image";
  }
  return "";
}

// An <img> of RUN_DIR/RELATIVE, embedded; "" when the file is missing. A file that is not a PNG of
// the run directory (a link, a FIFO, another file's bytes) is not embedded: the page and stderr say why.
std::string embedded_png(const fs::path& dir, const std::string& relative, const std::string& caption) {
  std::string bytes, problem;
  try {
    bytes = read_beneath(dir.string(), relative, kImageFileLimit, /*must_exist=*/false).value_or("");
    if (bytes.empty()) return "";
    problem = not_a_png(bytes);
  } catch (const Error& e) {
    problem = e.what();
  }
  if (!problem.empty()) {
    const std::string shown = (dir / relative).string();
    std::fprintf(stderr, "warning: report: %s not embedded: %s\n", shown.c_str(), problem.c_str());
    return "<p>" + escape(shown) + " not embedded: " + escape(problem) + "</p>\n";
  }
  return "<figure><img alt=\"" + escape(caption) + "\" src=\"data:image/png;base64," + base64(bytes) +
         "\"><figcaption>" + escape(caption) + "</figcaption></figure>\n";
}

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (epoch, value), finite values only
};

// A line chart of `series` against the epoch as inline SVG, with the best epoch marked.
std::string svg_chart(const std::string& title, const std::vector<Series>& series, double best_epoch) {
  static const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"};
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& s : series)
    for (const auto& [x, y] : s.points)
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
  if (x1 <= x0) x0 -= 1, x1 += 1;
  if (y1 <= y0) y0 -= 1, y1 += 1;
  const double w = 760, h = 240, left = 70, right = 20, top = 30, bottom = 40;
  const auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (w - left - right); };
  const auto py = [&](double y) { return top + (1 - (y - y0) / (y1 - y0)) * (h - top - bottom); };
  char buffer[256];
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h << "\" role=\"img\">"
      << "<title>" << escape(title) << "</title><rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>"
      << "<text x=\"" << left << "\" y=\"18\" font-weight=\"bold\">" << escape(title) << "</text>";
  svg << "<line x1=\"" << left << "\" y1=\"" << h - bottom << "\" x2=\"" << w - right << "\" y2=\"" << h - bottom
      << "\" stroke=\"#888\"/><line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\""
      << h - bottom << "\" stroke=\"#888\"/>";
  for (const double y : {y0, (y0 + y1) / 2, y1}) {
    std::snprintf(buffer, sizeof(buffer), "%.4g", y);
    svg << "<text x=\"" << left - 6 << "\" y=\"" << py(y) + 4 << "\" text-anchor=\"end\" font-size=\"11\">" << buffer
        << "</text>";
  }
  for (const double x : {x0, x1}) {
    std::snprintf(buffer, sizeof(buffer), "%.0f", x);
    svg << "<text x=\"" << px(x) << "\" y=\"" << h - bottom + 16 << "\" text-anchor=\"middle\" font-size=\"11\">"
        << buffer << "</text>";
  }
  svg << "<text x=\"" << (left + w - right) / 2 << "\" y=\"" << h - 6
      << "\" text-anchor=\"middle\" font-size=\"11\">epoch</text>";
  if (std::isfinite(best_epoch) && best_epoch >= 0 && best_epoch >= x0 && best_epoch <= x1)
    svg << "<line x1=\"" << px(best_epoch) << "\" y1=\"" << top << "\" x2=\"" << px(best_epoch) << "\" y2=\""
        << h - bottom << "\" stroke=\"#2ca02c\" stroke-dasharray=\"4 3\"/><text x=\"" << px(best_epoch) + 4 << "\" y=\""
        << top + 10 << "\" font-size=\"11\" fill=\"#2ca02c\">best</text>";
  for (size_t i = 0; i < series.size(); ++i) {
    const char* colour = colours[i % (sizeof(colours) / sizeof(*colours))];
    std::string points;
    for (const auto& [x, y] : series[i].points) {
      std::snprintf(buffer, sizeof(buffer), "%.1f,%.1f ", px(x), py(y));
      points += buffer;
    }
    if (series[i].points.size() == 1)
      svg << "<circle cx=\"" << px(series[i].points[0].first) << "\" cy=\"" << py(series[i].points[0].second)
          << "\" r=\"3\" fill=\"" << colour << "\"/>";
    else
      svg << "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"" << colour << "\" points=\"" << points << "\"/>";
    svg << "<text x=\"" << w - right - 4 << "\" y=\"" << top + 14 * (i + 1)
        << "\" text-anchor=\"end\" font-size=\"11\" fill=\"" << colour << "\">" << escape(series[i].name) << "</text>";
  }
  svg << "</svg>\n";
  return svg.str();
}

// The number after `"key": ` (and `{"mean": ` when it opens an object) in a JSON text we wrote.
double json_number(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return NAN;
  at += key.size() + 4;
  if (json.compare(at, 10, "{\"mean\": ") == 0 || json[at] == '{') at = json.find(": ", at) + 2;
  try {
    return std::stod(json.substr(at, 40));
  } catch (const std::exception&) {
    return NAN;
  }
}

std::string cell(double value) {
  if (!std::isfinite(value)) return "<td>–</td>";
  char text[32];
  std::snprintf(text, sizeof(text), "%.5g", value);
  return std::string("<td>") + text + "</td>";
}

// The time to quality (See Note [time to quality]): summary.json's time_to_quality line names the
// watched column and the targets; the epochs and clocks are read from metrics.csv, as the run read
// them. "" when the summary has no such line (a run of before it, or one still going).
std::string time_to_quality_table(const MetricsTable& table, const std::string& summary, double best) {
  const std::string opening = "\"time_to_quality\": {\"column\": \"";
  const auto at = summary.find(opening);
  if (at == std::string::npos) return "";
  const auto start = at + opening.size();
  const std::string column = summary.substr(start, summary.find('"', start) - start);
  const auto line_end = std::min(summary.find('\n', at), summary.size());
  std::vector<double> targets;
  const std::string key = "{\"target\": ";
  for (auto t = summary.find(key, at); t < line_end; t = summary.find(key, t + key.size())) {
    const double value = std::strtod(summary.c_str() + t + key.size(), nullptr);
    if (std::isfinite(value)) targets.push_back(value);
  }
  // The run's own word on which way is better; a line without it (pix2pix 4b14110 wrote none) is
  // read by the column's name: FID and KID are the only values watched lower-is-better.
  const auto said = summary.find("\"lower_is_better\": ", at);
  const bool lower = said < line_end
                         ? summary.compare(said + 19, 4, "true") == 0
                         : column.find("fid") != std::string::npos || column.find("kid") != std::string::npos;
  std::ostringstream html;
  html << "<h2>Time to quality</h2>\n<table><tr><th>reached</th><th>epoch</th><th>training s</th><th>wall s</th>"
       << "</tr>\n";
  const auto row = [&](const std::string& what, const QualityReached& r) {
    html << "<tr><td>" << escape(what) << "</td>" << cell(r.epoch < 0 ? NAN : static_cast<double>(r.epoch))
         << cell(r.train_s) << cell(r.wall_s) << "</tr>\n";
  };
  if (std::isfinite(best)) row("best epoch", at_epoch(table, static_cast<std::int64_t>(best)));
  for (const QualityReached& r : first_reached(table, column, targets, lower)) {
    char target[32];
    std::snprintf(target, sizeof(target), "%.6g", r.target);
    row(column + (lower ? " <= " : " >= ") + target, r);
  }
  html << "</table>\n";
  return html.str();
}

}  // namespace

std::string write_html_report(const std::string& run_dir, const std::string& versions) {
  const fs::path dir(run_dir);
  const MetricsTable table = read_metrics_table(run_dir);
  const std::vector<std::string>& names = table.columns;
  const std::int64_t last_epoch = table.last_epoch();
  const std::string summary = read_text(dir, "summary.json");
  double best = summary.empty() ? NAN : json_number(summary, "best_epoch");
  if (!(std::abs(best) < 1e15)) best = NAN;  // an epoch, or none (a hand-made file may say anything)

  std::ostringstream html;
  html << "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>pix2pix-mpi run " << escape(run_dir)
       << "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}"
       << "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
       << "pre{background:#f4f4f4;padding:8px;overflow-x:auto}figure{display:inline-block;margin:0 1em 1em 0}"
       << "img{image-rendering:pixelated;max-width:100%}</style></head><body>\n"
       << "<h1>pix2pix-mpi run <code>" << escape(run_dir) << "</code></h1>\n"
       << "<p id=\"image-check\">images: not checked (the page's script did not run)</p>\n";

  html << "<h2>Summary</h2>\n";
  if (summary.empty()) {
    html << "<p>No summary.json: the run is in progress, or ended before writing it. Epochs so far: " << last_epoch + 1
         << ".</p>\n";
  } else {
    html << "<table>\n";
    std::istringstream lines(summary);
    for (std::string l; std::getline(lines, l);) {
      const auto colon = l.find("\": ");
      if (colon == std::string::npos) continue;
      const auto open = l.find('"');
      std::string value = l.substr(colon + 3);
      if (!value.empty() && value.back() == ',') value.pop_back();
      html << "<tr><th>" << escape(l.substr(open + 1, colon - open - 1)) << "</th><td>" << escape(value)
           << "</td></tr>\n";
    }
    html << "</table>\n";
  }

  if (!summary.empty()) html << time_to_quality_table(table, summary, best);
  html << "<h2>Curves</h2>\n";
  const std::vector<std::pair<std::string, std::string>> charts = {{"Validation PSNR (dB)", "psnr"},
                                                                   {"FID", "val_fid"},
                                                                   {"KID", "val_kid"},
                                                                   {"Recognition accuracy", "val_recognition"},
                                                                   {"Losses", "loss_"}};
  for (const auto& [title, part] : charts) {
    std::vector<Series> series;
    for (const auto& name : names)
      if (name != names.front() && name.find(part) != std::string::npos && !table.series(name).empty())
        series.push_back({name, table.series(name)});
    if (!series.empty()) html << svg_chart(title, series, best);
  }

  html << "<h2>Samples</h2>\n";
  char name[64];
  if (std::isfinite(best) && best >= 0) {
    std::snprintf(name, sizeof(name), "epoch_%04lld.png", static_cast<long long>(best));
    html << embedded_png(dir, std::string("samples/") + name,
                         "best epoch " + std::to_string(static_cast<long long>(best)));
  }
  if (last_epoch >= 0 && last_epoch != static_cast<std::int64_t>(best)) {
    std::snprintf(name, sizeof(name), "epoch_%04lld.png", static_cast<long long>(last_epoch));
    html << embedded_png(dir, std::string("samples/") + name, "last epoch " + std::to_string(last_epoch));
  }
  html << embedded_png(dir, "curves.png", "curves.png");

  // Evaluations: `evaluate --out` folders inside the run directory (folders, not links to folders).
  std::vector<std::pair<std::string, std::string>> evaluations;  // (folder, evaluation.json)
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    const std::string folder = entry.path().filename().string();
    std::string json = read_text(dir, folder + "/evaluation.json");
    if (!json.empty()) evaluations.emplace_back(folder, std::move(json));
  }
  std::sort(evaluations.begin(), evaluations.end());
  if (!evaluations.empty()) {
    html << "<h2>Evaluations</h2>\n<table><tr><th>folder</th><th>split</th><th>images</th><th>PSNR</th><th>SSIM</th>"
         << "<th>L1</th><th>FID</th><th>KID</th></tr>\n";
    for (const auto& [folder, json] : evaluations) {
      const auto split_at = json.find("\"split\": \"");
      const std::string split = split_at == std::string::npos
                                    ? "?"
                                    : json.substr(split_at + 10, json.find('"', split_at + 10) - split_at - 10);
      html << "<tr><td>" << escape(folder) << "</td><td>" << escape(split) << "</td>"
           << cell(json_number(json, "images")) << cell(json_number(json, "psnr")) << cell(json_number(json, "ssim"))
           << cell(json_number(json, "l1")) << cell(json_number(json, "fid")) << cell(json_number(json, "kid"))
           << "</tr>\n";
    }
    html << "</table>\n";
    for (const auto& [folder, json] : evaluations)
      html << embedded_png(dir, folder + "/samples.png", folder + "/samples.png");
  }

  html
      << "<h2>Options</h2>\n<pre>" << escape(read_text(dir, "config.cfg")) << "</pre>\n"
      << "<h2>Libraries</h2>\n<p>Of the pix2pix that wrote this report:</p>\n<pre>" << escape(versions) << "</pre>\n"
      << "<script>window.addEventListener('load', function () {\n"
      << "  var images = Array.prototype.slice.call(document.images);\n"
      << "  var loaded = images.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;\n"
      << "  document.getElementById('image-check').textContent = 'images loaded: ' + loaded + ' of ' + images.length;\n"
      << "});</script>\n</body></html>\n";
  const std::string path = (dir / "report.html").string();
  write_file_atomically(path, html.str());
  return path;
}

}  // namespace pix2pix::metrics
