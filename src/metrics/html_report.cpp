#include "pix2pix/metrics/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/metrics/run_directory.hpp"

namespace pix2pix::metrics {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return in ? std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) : "";
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

// An <img> of a PNG file, embedded; "" when the file is missing.
std::string embedded_png(const fs::path& path, const std::string& caption) {
  const std::string bytes = read_text(path);
  if (bytes.empty()) return "";
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

}  // namespace

std::string write_html_report(const std::string& run_dir, const std::string& versions) {
  const fs::path dir(run_dir), csv_path = dir / "metrics.csv";
  std::ifstream csv(csv_path);
  if (!csv) throw Error(csv_path.string() + " does not exist: " + run_dir + " is not a pix2pix run directory");
  std::string line;
  std::getline(csv, line);
  const std::vector<std::string> names = csv_fields(line);
  std::map<std::string, Series> columns;
  std::int64_t last_epoch = -1;
  while (std::getline(csv, line)) {
    const auto fields = csv_fields(line);
    if (fields.empty()) continue;
    const double epoch = std::strtod(fields[0].c_str(), nullptr);
    last_epoch = static_cast<std::int64_t>(epoch);
    for (size_t i = 1; i < fields.size() && i < names.size(); ++i) {
      if (fields[i].empty()) continue;
      const double value = std::strtod(fields[i].c_str(), nullptr);
      if (std::isfinite(value)) columns[names[i]].points.emplace_back(epoch, value);
    }
  }
  const std::string summary = read_text(dir / "summary.json");
  const double best = summary.empty() ? NAN : json_number(summary, "best_epoch");

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

  html << "<h2>Curves</h2>\n";
  const std::vector<std::pair<std::string, std::string>> charts = {{"Validation PSNR (dB)", "psnr"},
                                                                   {"FID", "val_fid"},
                                                                   {"KID", "val_kid"},
                                                                   {"Recognition accuracy", "val_recognition"},
                                                                   {"Losses", "loss_"}};
  for (const auto& [title, part] : charts) {
    std::vector<Series> series;
    for (const auto& name : names)
      if (name.find(part) != std::string::npos && columns.count(name) && !columns[name].points.empty()) {
        series.push_back(columns[name]);
        series.back().name = name;
      }
    if (!series.empty()) html << svg_chart(title, series, best);
  }

  html << "<h2>Samples</h2>\n";
  char name[64];
  if (std::isfinite(best) && best >= 0) {
    std::snprintf(name, sizeof(name), "epoch_%04lld.png", static_cast<long long>(best));
    html << embedded_png(dir / "samples" / name, "best epoch " + std::to_string(static_cast<long long>(best)));
  }
  if (last_epoch >= 0 && last_epoch != static_cast<std::int64_t>(best)) {
    std::snprintf(name, sizeof(name), "epoch_%04lld.png", static_cast<long long>(last_epoch));
    html << embedded_png(dir / "samples" / name, "last epoch " + std::to_string(last_epoch));
  }
  html << embedded_png(dir / "curves.png", "curves.png (gnuplot)");

  // Evaluations: `evaluate --out` folders inside the run directory.
  std::vector<fs::path> evaluations;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory(ec) && fs::is_regular_file(entry.path() / "evaluation.json", ec))
      evaluations.push_back(entry.path());
  std::sort(evaluations.begin(), evaluations.end());
  if (!evaluations.empty()) {
    html << "<h2>Evaluations</h2>\n<table><tr><th>folder</th><th>split</th><th>images</th><th>PSNR</th><th>SSIM</th>"
         << "<th>L1</th><th>FID</th><th>KID</th></tr>\n";
    for (const auto& e : evaluations) {
      const std::string json = read_text(e / "evaluation.json");
      const auto split_at = json.find("\"split\": \"");
      const std::string split = split_at == std::string::npos
                                    ? "?"
                                    : json.substr(split_at + 10, json.find('"', split_at + 10) - split_at - 10);
      html << "<tr><td>" << escape(e.filename().string()) << "</td><td>" << escape(split) << "</td>"
           << cell(json_number(json, "images")) << cell(json_number(json, "psnr")) << cell(json_number(json, "ssim"))
           << cell(json_number(json, "l1")) << cell(json_number(json, "fid")) << cell(json_number(json, "kid"))
           << "</tr>\n";
    }
    html << "</table>\n";
    for (const auto& e : evaluations) html << embedded_png(e / "samples.png", e.filename().string() + "/samples.png");
  }

  html
      << "<h2>Options</h2>\n<pre>" << escape(read_text(dir / "config.cfg")) << "</pre>\n"
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
