#include "perf/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "perf/json.h"
#include "perf/number_format.h"

namespace shale::perf {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o.push_back(c);
    }
  }
  return o;
}

std::string num(double v, int decimals) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

// A "nice" axis maximum: 1, 2 or 5 times a power of ten, at least v.
double nice_max(double v) {
  if (!(v > 0)) return 1;
  double p = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

}  // namespace

std::string svg_line_chart(const std::string& title, const std::string& y_label,
                           const std::vector<double>& x, const std::vector<Series>& series) {
  const double W = 900, H = 320, L = 70, R = 160, T = 30, B = 45;
  const double pw = W - L - R, ph = H - T - B;
  double xmax = x.empty() ? 1 : std::max(1e-9, *std::max_element(x.begin(), x.end()));
  double ymax = 0;
  for (const auto& s : series) {
    for (double v : s.y) {
      if (std::isfinite(v)) ymax = std::max(ymax, v);
    }
  }
  ymax = nice_max(ymax);
  auto sx = [&](double v) { return L + v / xmax * pw; };
  auto sy = [&](double v) { return T + ph - v / ymax * ph; };
  std::string o = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W, 0) +
                  "\" height=\"" + num(H, 0) + "\" viewBox=\"0 0 " + num(W, 0) + " " + num(H, 0) +
                  "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o += "<text x=\"" + num(L, 0) + "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" +
       esc(title) + "</text>\n";
  for (int i = 0; i <= 5; ++i) {
    double yv = ymax * i / 5, xv = xmax * i / 5;
    o += "<line x1=\"" + num(L, 1) + "\" x2=\"" + num(L + pw, 1) + "\" y1=\"" + num(sy(yv), 1) +
         "\" y2=\"" + num(sy(yv), 1) + "\" stroke=\"#ddd\"/>\n";
    o += "<text x=\"" + num(L - 6, 1) + "\" y=\"" + num(sy(yv) + 4, 1) + "\" text-anchor=\"end\">" +
         num(yv, ymax < 10 ? 2 : 0) + "</text>\n";
    o += "<text x=\"" + num(sx(xv), 1) + "\" y=\"" + num(T + ph + 18, 1) +
         "\" text-anchor=\"middle\">" + num(xv, xmax < 10 ? 1 : 0) + "</text>\n";
  }
  o += "<rect x=\"" + num(L, 1) + "\" y=\"" + num(T, 1) + "\" width=\"" + num(pw, 1) +
       "\" height=\"" + num(ph, 1) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  o += "<text x=\"" + num(L + pw / 2, 1) + "\" y=\"" + num(H - 8, 1) +
       "\" text-anchor=\"middle\">time (s)</text>\n";
  o += "<text transform=\"translate(16," + num(T + ph / 2, 1) +
       ") rotate(-90)\" text-anchor=\"middle\">" + esc(y_label) + "</text>\n";
  int li = 0;
  for (const auto& s : series) {
    std::string pts;
    for (size_t i = 0; i < x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      pts += num(sx(x[i]), 1) + "," + num(sy(s.y[i]), 1) + " ";
    }
    o += "<polyline fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"1.5\" points=\"" + pts +
         "\"/>\n";
    double ly = T + 10 + 18 * li++;
    o += "<line x1=\"" + num(L + pw + 12, 1) + "\" x2=\"" + num(L + pw + 32, 1) + "\" y1=\"" +
         num(ly, 1) + "\" y2=\"" + num(ly, 1) + "\" stroke=\"" + s.color +
         "\" stroke-width=\"2\"/>\n";
    o += "<text x=\"" + num(L + pw + 38, 1) + "\" y=\"" + num(ly + 4, 1) + "\">" + esc(s.name) +
         "</text>\n";
  }
  return o + "</svg>\n";
}

std::string html_report(const PerfConfig& c, const Result& r, const std::vector<double>& cpu) {
  const auto& x = r.time_secs;
  auto col = [&](auto f) {
    std::vector<double> v;
    for (const auto& p : r.periods) v.push_back(f(p));
    return v;
  };
  const double mib = 1 << 20;
  std::string o =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>shale perf report</title>\n"
      "<style>body{font-family:sans-serif;margin:20px}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}"
      "pre{background:#f8f8f8;padding:8px}</style></head><body>\n";
  o += "<h1>shale perf report</h1>\n<p>Bootstrap: " + esc(c.bootstrap_server) + " &mdash; " +
       std::to_string(c.topics) + " topics &times; " + std::to_string(c.partitions_per_topic) +
       " partitions, " + std::to_string(c.record_size) + " B records, target " +
       std::to_string(c.send_rate) + " msg/s</p>\n";
  const auto& t = r.total;
  o += "<table><tr><th></th><th>rate (msg/s)</th><th>throughput (MiB/s)</th><th>count</th>"
       "<th>avg (ms)</th><th>p50</th><th>p99</th><th>p99.9</th><th>max</th></tr>\n";
  auto row = [&](const char* name, double rate, double bps, double count, const LatencySummary& l) {
    o += std::string("<tr><th>") + name + "</th><td>" + num(rate, 2) + "</td><td>" +
         num(bps / mib, 2) + "</td><td>" + num(count, 0) + "</td><td>" + num(l.mean / 1000, 3) +
         "</td><td>" + num(l.p50 / 1000, 3) + "</td><td>" + num(l.p99 / 1000, 3) + "</td><td>" +
         num(l.p999 / 1000, 3) + "</td><td>" + num(l.max / 1000, 3) + "</td></tr>\n";
  };
  row("produce", t.produce_rate_total, t.produce_throughput_total_bps, t.produce_count_total,
      t.send);
  row("end-to-end", t.consume_rate_total, t.consume_throughput_total_bps, t.consume_count_total,
      t.e2e);
  o += "</table>\n";
  o += svg_line_chart("Throughput", "MiB/s", x,
                      {{"produce", "#1f77b4",
                        col([&](const PeriodResult& p) { return p.produce_throughput_bps / mib; })},
                       {"consume", "#ff7f0e", col([&](const PeriodResult& p) {
                          return p.consume_throughput_bps / mib;
                        })}});
  auto lat_chart = [&](const char* title, LatencySummary PeriodResult::*m) {
    return svg_line_chart(
        title, "ms", x,
        {{"p50", "#2ca02c", col([&](const PeriodResult& p) { return (p.*m).p50 / 1000; })},
         {"p99", "#d62728", col([&](const PeriodResult& p) { return (p.*m).p99 / 1000; })},
         {"p99.9", "#9467bd", col([&](const PeriodResult& p) { return (p.*m).p999 / 1000; })},
         {"max", "#7f7f7f", col([&](const PeriodResult& p) { return (p.*m).max / 1000; })}});
  };
  o += lat_chart("Produce latency", &PeriodResult::send);
  o += lat_chart("End-to-end latency", &PeriodResult::e2e);
  if (!cpu.empty()) {
    std::vector<double> xc(x.begin(),
                           x.begin() + static_cast<ptrdiff_t>(std::min(x.size(), cpu.size())));
    std::vector<double> pct;
    for (double v : cpu) pct.push_back(v * 100);
    o += svg_line_chart("shale perf's own CPU", "% of one core", xc, {{"cpu", "#8c564b", pct}});
  }
  o += "<h2>Configuration</h2>\n<pre>" + esc(config_json(c).pretty()) + "</pre>\n</body></html>\n";
  return o;
}

}  // namespace shale::perf
