// SPDX-License-Identifier: BSD-3-Clause
// Command lines for the fuzz harness (see FuzzArgs.hpp). Valid values stay
// small, so that every valid run is quick; the malformed ones are the edges
// the parsers must refuse: no value, not a number, below the minimum,
// beyond the type or the format's limits, unknown names, text with control
// characters (which a one-line error must not print raw).
#include "FuzzArgs.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace KokkosMoE {
namespace Fuzz {
namespace {

using Strings = std::vector<std::string>;

// One option with its value, or a positional argument: kept together when
// the arguments are shuffled.
struct Item {
  std::string name;  // "" for a positional argument
  Strings args;
};
using Items = std::vector<Item>;

Item opt(Rng& rng, const std::string& name, const std::string& value) {
  if (rng.chance(0.3)) return {name, {name + "=" + value}};
  return {name, {name, value}};
}
Item flag(const std::string& name) { return {name, {name}}; }
Item positional(const std::string& arg) { return {"", {arg}}; }

void drop(Items& items, const Strings& names) {
  items.erase(std::remove_if(items.begin(), items.end(),
                             [&](const Item& i) {
                               return std::find(names.begin(), names.end(), i.name) != names.end();
                             }),
              items.end());
}

Strings flatten(Rng& rng, Items items) {
  rng.shuffle(items);
  Strings out;
  for (const Item& i : items) out.insert(out.end(), i.args.begin(), i.args.end());
  return out;
}

std::string num(std::int64_t v) { return std::to_string(v); }

Strings concat(Strings a, const Strings& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ------------------------------------------------------------------- pools

const Strings kNotInteger = {"",    "abc",   "1.5",  "1e3",      "0x10", " 7",
                             "7 ",  "+7",    "7abc", "\xd9\xa3", "-",    "--",
                             "1,2", "seven", "1\n2", "\x1b[31m7"};
const Strings kOverflow = {"9223372036854775808", "99999999999999999999999",
                           "-9223372036854775809"};
const Strings kNotFinite = {"nan", "inf",   "-inf", "1e999", "-1e999", "abc",
                            "",    "1.5.2", "1e",   "0x",    "1\n",    "\x1b[2J"};
// Text that a one-line error must not print raw.
const Strings kWeird = {"a\nb",     "\x1b[2J",          "tab\there",
                        "\xff\xfe", "bidi\xe2\x80\xae", std::string(3000, 'x'),
                        "cr\rlf"};
// Model names a trace may carry (any text is valid).
const Strings kModels = {"synthetic",   "",
                         "custom-moe",  "line\nbreak",
                         "\x1b[31mred", std::string(300, 'm'),
                         "caf\xc3\xa9", "\xff"};

struct PresetShape {
  const char* name;
  int experts, top_k;
};
const std::vector<PresetShape> kPresets = {
    {"mixtral-8x7b", 8, 2}, {"qwen2-57b", 64, 8}, {"deepseek-v3", 256, 8}, {"gpt-oss-20b", 32, 4}};
const Strings kBadPresets = {"mixtral",      "",      "MIXTRAL-8X7B", "deepseek",
                             "gpt-oss-20b ", "gpt-4", "a\nb"};

Strings join_pools(std::initializer_list<Strings> pools) {
  Strings out;
  for (const Strings& p : pools) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Strings bad_ints(const Strings& more) { return join_pools({kNotInteger, kOverflow, more}); }

std::string case_file(const Context& ctx, int id, const char* ext) {
  return ctx.dir + "/case-" + std::to_string(id) + ext;
}

// Files that are not traces (all read-only for the cases).
Strings not_traces(const Context& ctx) {
  return {ctx.missing, ctx.directory, ctx.text_file, ctx.empty_file};
}

Case make(const char* category, Strings argv, Expect expect, std::string what) {
  Case c;
  c.category = category;
  c.argv = std::move(argv);
  c.expect = expect;
  c.what = std::move(what);
  return c;
}

// A defect: changes valid items into invalid ones and says what it did.
using Defect = std::function<std::string(Items&, Rng&)>;

// Replaces every occurrence of an option with one malformed value.
Defect bad_value(const std::string& name, const Strings& values) {
  return [name, values](Items& items, Rng& rng) {
    drop(items, {name});
    const std::string v = rng.pick(values);
    items.push_back(opt(rng, name, v));
    return name + " '" + v.substr(0, 40) + "'";
  };
}

// ------------------------------------------------------------------- synth

struct SynthShape {
  int experts = 8, top_k = 2;
};

std::string valid_loads(Rng& rng, int E, int k) {
  const Strings values = {"1", "0", "2.5", "1e-3", "0.0", "7", "0x1p1"};
  Strings v(static_cast<std::size_t>(E));
  for (std::string& x : v) x = rng.pick(values);
  // At least k positive entries: k distinct ones set to 1.
  std::vector<std::size_t> order(v.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  rng.shuffle(order);
  for (int i = 0; i < k; ++i) v[order[static_cast<std::size_t>(i)]] = "1";
  std::string out;
  for (const std::string& x : v) out += (out.empty() ? "" : ",") + x;
  return out;
}

Items synth_valid(Rng& rng, const Context& ctx, int id, SynthShape& s) {
  Items items;
  items.push_back(opt(rng, "--out", case_file(ctx, id, ".h5")));
  if (rng.chance(0.3)) {
    const PresetShape& p = rng.pick(kPresets);
    items.push_back(opt(rng, "--preset", p.name));
    s.experts = p.experts;
    s.top_k = p.top_k;
  }
  if (rng.chance(0.5)) {
    s.experts = static_cast<int>(rng.range(1, 64));
    items.push_back(opt(rng, "--experts", num(s.experts)));
  }
  if (s.top_k > s.experts || rng.chance(0.5)) {
    s.top_k = static_cast<int>(rng.range(1, std::min(s.experts, 8)));
    items.push_back(opt(rng, "--top-k", num(s.top_k)));
  }
  for (const char* name : {"--hidden", "--ffn"})
    if (rng.chance(0.3))
      items.push_back(opt(rng, name, rng.chance(0.8) ? num(rng.range(0, 4096)) : "1048576"));
  if (rng.chance(0.8)) items.push_back(opt(rng, "--tokens", num(rng.range(0, 200))));
  if (rng.chance(0.6)) items.push_back(opt(rng, "--layers", num(rng.range(1, 3))));
  switch (rng.below(4)) {
    case 0: break;
    case 1: items.push_back(opt(rng, "--dist", "uniform")); break;
    case 2:
      items.push_back(opt(rng, "--dist", "zipf"));
      if (rng.chance(0.6))
        items.push_back(
            opt(rng, "--zipf-s", rng.pick(Strings{"0", "1", "0.5", "2.5", "1e-3", "3", "0x1p1"})));
      break;
    default:
      if (rng.chance(0.5)) items.push_back(opt(rng, "--dist", "loads"));
      items.push_back(opt(rng, "--loads", valid_loads(rng, s.experts, s.top_k)));
  }
  if (rng.chance(0.4))
    items.push_back(opt(
        rng, "--seed", rng.pick(Strings{std::to_string(rng.next()), "0", "18446744073709551615"})));
  if (rng.chance(0.3)) items.push_back(opt(rng, "--model", rng.pick(kModels)));
  // Repeated options: the last one counts.
  if (rng.chance(0.15)) items.push_back(opt(rng, "--tokens", num(rng.range(0, 50))));
  if (rng.chance(0.15)) items.push_back(opt(rng, "--seed", num(rng.range(0, 9))));
  return items;
}

std::vector<Defect> synth_defects(const Context& ctx, const SynthShape& s) {
  std::vector<Defect> d = {
      bad_value("--experts", bad_ints({"0", "-1", "1048577", "1073741825", "2147483648"})),
      bad_value("--top-k", bad_ints({"0", "-1", "1073741825"})),
      bad_value("--hidden", bad_ints({"-1", "1048577", "9223372036854775807"})),
      bad_value("--ffn", bad_ints({"-1", "1048577", "9223372036854775807"})),
      bad_value("--tokens",
                bad_ints({"-1", "4611686018427387904", "1099511627776", "9223372036854775807"})),
      bad_value("--layers", bad_ints({"0", "-1", "65537", "1073741825", "2147483648"})),
      bad_value("--seed", join_pools({kNotInteger, {"-1", "18446744073709551616"}})),
      bad_value("--preset", kBadPresets),
      bad_value("--dist", {"", "Uniform", "zipf2", "normal", "loads,zipf", "zipf\n"}),
  };
  d.push_back([](Items& items, Rng& rng) {
    drop(items, {"--dist", "--zipf-s", "--loads"});
    items.push_back(opt(rng, "--dist", "zipf"));
    const std::string v = rng.pick(join_pools({kNotFinite, {"-1", "-0.5"}}));
    items.push_back(opt(rng, "--zipf-s", v));
    return "--zipf-s '" + v + "'";
  });
  d.push_back([](Items& items, Rng& rng) {
    drop(items, {"--experts", "--top-k"});
    const int e = static_cast<int>(rng.range(1, 8));
    items.push_back(opt(rng, "--experts", num(e)));
    items.push_back(opt(rng, "--top-k", num(e + rng.range(1, 3))));
    return std::string("--top-k above --experts");
  });
  d.push_back([s](Items& items, Rng& rng) {
    drop(items, {"--dist", "--zipf-s", "--loads"});
    const bool uniform = rng.chance(0.5);
    if (uniform) items.push_back(opt(rng, "--dist", "uniform"));
    else items.push_back(opt(rng, "--loads", valid_loads(rng, s.experts, s.top_k)));
    items.push_back(opt(rng, "--zipf-s", "1"));
    return std::string("--zipf-s without --dist zipf");
  });
  d.push_back([s](Items& items, Rng& rng) {
    drop(items, {"--dist", "--zipf-s", "--loads"});
    items.push_back(opt(rng, "--dist", rng.chance(0.5) ? "uniform" : "zipf"));
    items.push_back(opt(rng, "--loads", valid_loads(rng, s.experts, s.top_k)));
    return std::string("--loads without --dist loads");
  });
  d.push_back([](Items& items, Rng& rng) {
    drop(items, {"--dist", "--zipf-s", "--loads"});
    items.push_back(opt(rng, "--dist", "loads"));
    return std::string("--dist loads without --loads");
  });
  d.push_back([s](Items& items, Rng& rng) {
    drop(items, {"--dist", "--zipf-s", "--loads"});
    if (rng.chance(0.5)) items.push_back(opt(rng, "--dist", "loads"));
    Strings v(static_cast<std::size_t>(s.experts), "1");
    std::string what;
    switch (rng.below(5)) {
      case 0:
        v.push_back("1");
        what = "one entry too many";
        break;
      case 1:
        v.pop_back();
        what = "one entry too few";
        break;
      case 2:
        v[rng.below(v.size())] = rng.pick(kNotFinite);
        what = "an entry not a number";
        break;
      case 3:
        v[rng.below(v.size())] = "-1";
        what = "a negative entry";
        break;
      default:
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = i + 1 < std::size_t(s.top_k) ? "1" : "0";
        what = "fewer than top_k positive entries";
    }
    std::string list;
    for (std::size_t i = 0; i < v.size(); ++i) list += (i ? "," : "") + v[i];
    items.push_back(opt(rng, "--loads", list));
    return "--loads with " + what;
  });
  d.push_back([ctx](Items& items, Rng& rng) {
    drop(items, {"--out"});
    switch (rng.below(4)) {
      case 0: return std::string("no --out");
      case 1: items.push_back(opt(rng, "--out", "")); return std::string("--out ''");
      case 2:
        items.push_back(opt(rng, "--out", "/nonexistent-dir/x.h5"));
        return std::string("--out in a missing directory");
      default:
        items.push_back(opt(rng, "--out", ctx.directory));
        return std::string("--out a directory");
    }
  });
  d.push_back([](Items& items, Rng& rng) {
    const std::string bad = rng.pick(join_pools(
        {{"--bogus", "-x", "--Tokens", "--out2=x", "positional", "--", "-", "--token"}, kWeird}));
    items.push_back(positional(bad));
    return "unknown argument '" + bad.substr(0, 40) + "'";
  });
  return d;
}

// The option name that goes last, without its value.
const Strings kSynthValued = {"--out",    "--preset", "--model",  "--experts", "--top-k",
                              "--hidden", "--ffn",    "--tokens", "--layers",  "--dist",
                              "--zipf-s", "--loads",  "--seed"};

Case synth_case(Rng& rng, int id, const Context& ctx) {
  SynthShape s;
  Items items = synth_valid(rng, ctx, id, s);
  const Strings head = {ctx.trace_exe, "synth"};
  if (rng.chance(0.35)) {
    Case c = make("trace-args", concat(head, flatten(rng, items)), Expect::success,
                  "synth, valid options");
    c.success_stdout = "wrote ";
    return c;
  }
  if (rng.chance(0.1)) {
    const std::string name = rng.pick(kSynthValued);
    return make("trace-args", concat(concat(head, flatten(rng, items)), {name}), Expect::failure,
                "synth, " + name + " without a value");
  }
  const std::vector<Defect> d = synth_defects(ctx, s);
  const std::string what = d[rng.below(d.size())](items, rng);
  return make("trace-args", concat(head, flatten(rng, items)), Expect::failure, "synth, " + what);
}

// ---------------------------------------------------------- info, validate

Case read_case(Rng& rng, const Context& ctx) {
  const std::string command = rng.chance(0.6) ? "validate" : "info";
  Items items = {positional(rng.chance(0.5) ? ctx.mixtral : ctx.custom)};
  const Strings readers = {"isolated", "in-process"};
  if (rng.chance(0.5)) items.push_back(opt(rng, "--reader", rng.pick(readers)));
  const Strings head = {ctx.trace_exe, command};
  if (rng.chance(0.3)) {
    Case c;
    if (rng.chance(0.15)) {
      items.push_back(flag(rng.chance(0.5) ? "--help" : "-h"));
      c = make("trace-args", concat(head, flatten(rng, items)), Expect::success,
               command + " --help");
      c.success_stdout = "usage: kokkos-moe-trace " + command;
    } else {
      c = make("trace-args", concat(head, flatten(rng, items)), Expect::success,
               command + ", valid options");
      c.success_stdout = command == "info" ? "median busiest/mean" : "OK: ";
    }
    return c;
  }
  std::string what;
  Strings tail;
  switch (rng.below(6)) {
    case 0:
      drop(items, {""});
      what = "no trace file";
      break;
    case 1:
      items.push_back(positional(ctx.custom));
      what = "two trace files";
      break;
    case 2: {
      drop(items, {"--reader"});
      const std::string v = rng.pick(join_pools(
          {{"fork", "", "Isolated", "in process", "isolated,in-process", "forked"}, kWeird}));
      items.push_back(opt(rng, "--reader", v));
      what = "--reader '" + v.substr(0, 40) + "'";
      break;
    }
    case 3:
      tail = {"--reader"};
      what = "--reader without a value";
      break;
    case 4: {
      const std::string v = rng.pick(
          join_pools({{"-x", "--bogus", "--reader2=x", "--Reader", "--readers", "--=x"}, kWeird}));
      items.push_back(positional(v));
      what = "unknown argument '" + v.substr(0, 40) + "'";
      break;
    }
    default: {
      drop(items, {""});
      const std::string f = rng.pick(not_traces(ctx));
      items.push_back(positional(f));
      what = "file " + f.substr(ctx.dir.size());
    }
  }
  return make("trace-args", concat(concat(head, flatten(rng, items)), tail), Expect::failure,
              command + ", " + what);
}

Case trace_command_case(Rng& rng, const Context& ctx) {
  if (rng.chance(0.3)) {
    Case c = make("trace-args",
                  concat({ctx.trace_exe}, rng.pick(std::vector<Strings>{
                                              {"--help"}, {"-h"}, {"help"}, {"synth", "--help"}})),
                  Expect::success, "help");
    c.success_stdout = "usage: kokkos-moe-trace";
    return c;
  }
  const std::vector<Strings> bad = {{},          {"frobnicate"},          {""},        {"INFO"},
                                    {"-x"},      {"--version"},           {"synth\n"}, {"validat"},
                                    {"\x1b[2J"}, {"--reader", "isolated"}};
  const Strings args = rng.pick(bad);
  return make("trace-args", concat({ctx.trace_exe}, args), Expect::failure,
              args.empty() ? "no command" : "command '" + args[0] + "'");
}

// ------------------------------------------------------------------ replay

struct ReplayBase {
  bool mixtral = false;
  std::vector<int> layers;
};

Items replay_valid(Rng& rng, const Context& ctx, int id, ReplayBase& b) {
  b.mixtral = rng.chance(0.5);
  b.layers = b.mixtral ? std::vector<int>{0, 1} : std::vector<int>{0, 1, 2};
  Items items = {positional(b.mixtral ? ctx.mixtral : ctx.custom)};
  if (rng.chance(0.4)) {
    std::string list = "all";
    if (rng.chance(0.7)) {
      list.clear();
      const int n = static_cast<int>(rng.range(1, 3));
      for (int i = 0; i < n; ++i) list += (i ? "," : "") + num(rng.pick(b.layers));
    }
    items.push_back(opt(rng, "--layers", list));
  }
  for (const char* name : {"--tokens", "--max-tokens"})
    if (rng.chance(0.4))
      items.push_back(opt(rng, name, rng.chance(0.8) ? num(rng.range(1, 80)) : "1000000000000"));
  if (b.mixtral && rng.chance(0.3)) items.push_back(opt(rng, "--model", "mixtral-8x7b"));
  bool small = !b.mixtral;
  if (rng.chance(0.3)) {
    const std::int64_t h = rng.range(1, 48), f = rng.range(1, 48);
    items.push_back(opt(rng, "--hidden", num(h)));
    items.push_back(opt(rng, "--ffn", num(f)));
    if (rng.chance(0.3)) items.push_back(opt(rng, "--reduce", num(rng.range(1, std::min(h, f)))));
    small = true;
  } else if (rng.chance(b.mixtral ? 0.7 : 0.3)) {
    // Enough for mixtral's 4096 x 14336 to stay small on the host.
    items.push_back(opt(rng, "--reduce",
                        b.mixtral ? rng.pick(Strings{"64", "128", "256"}) : num(rng.range(1, 8))));
    small = true;
  }
  if (rng.chance(0.5))
    items.push_back(opt(rng, "--dtype", rng.pick(Strings{"bf16", "fp16", "fp32", "fp8"})));
  if (rng.chance(0.8)) items.push_back(opt(rng, "--repeat", num(rng.range(1, 2))));
  if (rng.chance(0.8)) items.push_back(opt(rng, "--warmup", num(rng.range(0, 1))));
  if (rng.chance(0.3)) items.push_back(opt(rng, "--seed", std::to_string(rng.next())));
  if (rng.chance(0.4)) items.push_back(flag("--check"));
  if (rng.chance(0.2)) items.push_back(flag("--check-bits"));
  if (rng.chance(0.2)) items.push_back(flag("--batch-invariant"));
  if (rng.chance(0.2)) items.push_back(opt(rng, "--json", case_file(ctx, id, ".json")));
  if (rng.chance(0.3))
    items.push_back(opt(rng, "--reader", rng.pick(Strings{"isolated", "in-process"})));
  if (rng.chance(0.1))
    items.push_back(opt(rng, "--ep-gpu-aware", rng.pick(Strings{"detect", "yes", "no"})));
  if (rng.chance(0.1))
    items.push_back(opt(rng, "--ep-transport", rng.pick(Strings{"mpi", "nccl"})));
  if (rng.chance(0.1)) items.push_back(opt(rng, "--ep-capacity", num(rng.range(1, 1000))));
  if (rng.chance(0.15))
    items.push_back(flag(rng.pick(Strings{"--kokkos-threads=1", "--kokkos-disable-warnings"})));
  if (!small) {
    // The host's own reduction of mixtral (about 4 MFLOP a token) takes
    // seconds a forward under the sanitizers: a few tokens, one run.
    drop(items, {"--max-tokens", "--repeat", "--warmup", "--check-bits"});
    items.push_back(opt(rng, "--max-tokens", num(rng.range(1, 4))));
    items.push_back(opt(rng, "--repeat", "1"));
    items.push_back(opt(rng, "--warmup", "0"));
  }
  return items;
}

const Strings kReplayValued = {"--layers", "--tokens",      "--max-tokens",   "--model",
                               "--hidden", "--ffn",         "--reduce",       "--dtype",
                               "--repeat", "--warmup",      "--seed",         "--json",
                               "--reader", "--ep-capacity", "--ep-gpu-aware", "--ep-transport"};

// Kokkos 3.4's own options (Kokkos::initialize takes them out of argv).
const Strings kBadKokkos = {"--kokkos-threads=abc", "--kokkos-threads",
                            "--kokkos-threads=-1",  "--kokkos-threads=99999999999",
                            "--kokkos-threads=",    "--kokkos-numa=x",
                            "--kokkos-device-id=x", "--kokkos-num-devices=x",
                            "--threads=abc",        "--kokkos-ndevices=1,x"};

std::vector<Defect> replay_defects(const Context& ctx, const ReplayBase& b, bool ep_built) {
  const Strings bad_positive = bad_ints({"0", "-1"});
  std::vector<Defect> d = {
      bad_value("--tokens", bad_positive),
      bad_value("--max-tokens", bad_positive),
      bad_value("--hidden", join_pools({bad_positive, {"3000000000", "4611686018427387904"}})),
      bad_value("--ffn", join_pools({bad_positive, {"3000000000", "4611686018427387904"}})),
      bad_value("--reduce", join_pools({bad_positive, {"100000"}})),
      bad_value("--ep-capacity", bad_positive),
      bad_value("--repeat", bad_ints({"0", "-1", "1073741825"})),
      bad_value("--warmup", bad_ints({"-1", "1073741825"})),
      bad_value("--seed", join_pools({kNotInteger, {"-1", "18446744073709551616"}})),
      bad_value("--layers", join_pools({{"", ",", "0,,1", "-1", "abc", "1.5", "4294967297", "0,",
                                         "all,0", "ALL", "99", "0,99", "0\n1"}})),
      bad_value("--dtype", {"fp4", "", "BF16", "float", "bf16 ", "fp8\n", "\x1b[2J"}),
      bad_value("--model",
                join_pools({kBadPresets, b.mixtral
                                             ? Strings{"deepseek-v3", "qwen2-57b", "gpt-oss-20b"}
                                             : Strings{"mixtral-8x7b", "deepseek-v3"}})),
      bad_value("--json", {"", "/nonexistent-dir/x.json", ctx.directory}),
      bad_value("--reader", {"fork", "", "Isolated", "in process", "a\nb"}),
      bad_value("--ep-gpu-aware", {"maybe", "", "YES", "1", "\x1b[2J"}),
      bad_value("--ep-transport", {"nccl2", "", "MPI", "ucx", "mpi\n"}),
  };
  d.push_back([](Items& items, Rng& rng) {
    const std::string f = rng.pick(
        Strings{"--check=1", "--check-bits=", "--batch-invariant=yes", "--ep=0", "--check=\n"});
    items.push_back(flag(f));
    return "a flag with a value: '" + f + "'";
  });
  d.push_back([b](Items& items, Rng& rng) {
    drop(items, {"--hidden", "--ffn", "--reduce"});
    items.push_back(opt(rng, "--reduce", b.mixtral ? "100000" : num(rng.range(25, 1000))));
    return std::string("--reduce beyond H or F");
  });
  d.push_back([](Items& items, Rng&) {
    items.push_back(flag("--ep"));
    items.push_back(flag("--check-bits"));
    return std::string("--ep with --check-bits");
  });
  if (!ep_built)
    d.push_back([](Items& items, Rng&) {
      items.push_back(flag("--ep"));
      return std::string("--ep in a build without MPI");
    });
  d.push_back([](Items& items, Rng& rng) {
    const std::string v = rng.pick(
        join_pools({{"--bogus", "-x", "--layer", "--checks", "--tokens2=3", "-", "--"}, kWeird}));
    items.push_back(positional(v));
    return "unknown argument '" + v.substr(0, 40) + "'";
  });
  d.push_back([ctx](Items& items, Rng& rng) {
    items.push_back(positional(rng.chance(0.5) ? ctx.custom : ctx.mixtral));
    return std::string("two trace files");
  });
  d.push_back([](Items& items, Rng&) {
    drop(items, {""});
    return std::string("no trace file");
  });
  d.push_back([ctx](Items& items, Rng& rng) {
    drop(items, {""});
    const std::string f = rng.pick(not_traces(ctx));
    items.push_back(positional(f));
    return "trace file " + f.substr(ctx.dir.size());
  });
  d.push_back([](Items& items, Rng& rng) {
    const std::string k = rng.pick(kBadKokkos);
    items.push_back(flag(k));
    return "Kokkos option '" + k + "'";
  });
  return d;
}

// --------------------------------------------------------------- mixtures

const Strings kTraceNames = {"--out",  "--preset", "--model",  "--experts", "--top-k",  "--hidden",
                             "--ffn",  "--tokens", "--layers", "--dist",    "--zipf-s", "--loads",
                             "--seed", "--reader", "--help",   "-h",        "--bogus",  "-"};
const Strings kReplayNames = {"--layers",
                              "--tokens",
                              "--max-tokens",
                              "--model",
                              "--hidden",
                              "--ffn",
                              "--reduce",
                              "--dtype",
                              "--repeat",
                              "--warmup",
                              "--seed",
                              "--check",
                              "--batch-invariant",
                              "--check-bits",
                              "--reader",
                              "--ep",
                              "--ep-capacity",
                              "--ep-gpu-aware",
                              "--ep-transport",
                              "--help",
                              "--kokkos-threads=1",
                              "--kokkos-threads=abc",
                              "--kokkos-threads",
                              "--kokkos-disable-warnings",
                              "--threads=2",
                              "--bogus",
                              "-x"};
// Values: small numbers (every valid run stays quick), edges, words.
const Strings kValues = {"0",
                         "1",
                         "2",
                         "3",
                         "8",
                         "16",
                         "33",
                         "64",
                         "-1",
                         "abc",
                         "",
                         "1.5",
                         "nan",
                         "inf",
                         "1e999",
                         "9223372036854775808",
                         "3000000000",
                         "1000000000000",
                         "1,2",
                         "0,1",
                         "all",
                         "99",
                         "uniform",
                         "zipf",
                         "loads",
                         "mixtral-8x7b",
                         "deepseek-v3",
                         "bogus",
                         "bf16",
                         "fp8",
                         "fp4",
                         "isolated",
                         "in-process",
                         "detect",
                         "nccl",
                         "mpi",
                         "a\nb",
                         "\x1b[2J",
                         "1,0,2,1,0,3",
                         "--",
                         "-"};

}  // namespace

Case trace_args_case(Rng& rng, int id, const Context& ctx) {
  const std::uint64_t r = rng.below(10);
  if (r == 0) return trace_command_case(rng, ctx);
  if (r <= 5) return synth_case(rng, id, ctx);
  return read_case(rng, ctx);
}

Case replay_args_case(Rng& rng, int id, const Context& ctx, bool ep_built) {
  ReplayBase b;
  Items items = replay_valid(rng, ctx, id, b);
  const Strings head = {ctx.replay_exe};
  if (rng.chance(0.3)) {
    Case c;
    if (rng.chance(0.1)) {
      items.push_back(flag(rng.chance(0.5) ? "--help" : "-h"));
      c = make("replay-args", concat(head, flatten(rng, items)), Expect::success, "--help");
      c.success_stdout = "usage: kokkos-moe-replay";
    } else {
      c = make("replay-args", concat(head, flatten(rng, items)), Expect::success,
               std::string(b.mixtral ? "mixtral" : "custom") + " trace, valid options");
      c.success_stdout = "kokkos-moe-replay ";
    }
    return c;
  }
  if (rng.chance(0.1)) {
    const std::string name = rng.pick(kReplayValued);
    return make("replay-args", concat(concat(head, flatten(rng, items)), {name}), Expect::failure,
                name + " without a value");
  }
  const std::vector<Defect> d = replay_defects(ctx, b, ep_built);
  const std::string what = d[rng.below(d.size())](items, rng);
  return make("replay-args", concat(head, flatten(rng, items)), Expect::failure, what);
}

Case mixed_args_case(Rng& rng, int id, const Context& ctx) {
  const bool replay = rng.chance(0.5);
  Strings argv = {replay ? ctx.replay_exe : ctx.trace_exe};
  bool synth = false;
  if (!replay) {
    const std::string command =
        rng.pick(Strings{"synth", "synth", "validate", "info", "", "help", "bogus"});
    if (!command.empty()) argv.push_back(command);
    synth = command == "synth";
  }
  const Strings& names = replay ? kReplayNames : kTraceNames;
  // Files: read-only ones only where nothing is written (no --out, --json
  // takes only its own paths below), so no case changes another's input.
  Strings files = not_traces(ctx);
  if (!synth) files.push_back(replay ? ctx.custom : ctx.mixtral);
  const int n = static_cast<int>(rng.below(9));
  Items items;
  for (int i = 0; i < n; ++i) {
    switch (rng.below(5)) {
      case 0:
      case 1: {
        const std::string name = rng.pick(names);
        if (name == "--out" || name == "--json") {
          items.push_back(
              opt(rng, name, rng.chance(0.7) ? case_file(ctx, id, ".out") : "/nonexistent-dir/x"));
        } else {
          items.push_back(opt(rng, name, rng.pick(kValues)));
        }
        break;
      }
      case 2: {
        const std::string name = rng.pick(names);
        if (name != "--out" && name != "--json") items.push_back(flag(name));
        break;
      }
      case 3: items.push_back(positional(rng.pick(kValues))); break;
      default: items.push_back(positional(rng.pick(files)));
    }
  }
  Case c = make("mixed-args", concat(argv, flatten(rng, items)), Expect::either,
                std::to_string(n) + " random arguments");
  return c;
}

}  // namespace Fuzz
}  // namespace KokkosMoE
