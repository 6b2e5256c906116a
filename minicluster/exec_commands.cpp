#include "minicluster/exec_commands.h"

#include <cctype>
#include <chrono>
#include <thread>

namespace strait::minicluster {
namespace {

std::optional<std::string> lookupEnv(const ExecContext& ctx, const std::string& name) {
  std::optional<std::string> v;
  for (const auto& [k, val] : ctx.env) {
    if (k == name) v = val;
  }
  if (!v && name == "HOSTNAME") v = ctx.hostname;
  return v;
}

ExecResult runBuiltin(const std::vector<std::string>& argv, const ExecContext& ctx,
                      const std::string& in, const std::string& shellName) {
  ExecResult r;
  if (argv.empty()) return r;
  const std::string& cmd = argv[0];
  std::string base = cmd.substr(cmd.rfind('/') == std::string::npos ? 0 : cmd.rfind('/') + 1);
  if (base == "echo") {
    size_t i = 1;
    bool newline = true;
    if (argv.size() > 1 && argv[1] == "-n") {
      newline = false;
      i = 2;
    }
    for (size_t j = i; j < argv.size(); ++j) r.out += (j > i ? " " : "") + argv[j];
    if (newline) r.out += "\n";
  } else if (base == "hostname") {
    r.out = ctx.hostname + "\n";
  } else if (base == "env" || base == "printenv") {
    if (base == "printenv" && argv.size() > 1) {
      for (size_t j = 1; j < argv.size(); ++j) {
        auto v = lookupEnv(ctx, argv[j]);
        if (v) {
          r.out += *v + "\n";
        } else {
          r.exitCode = 1;
        }
      }
    } else {
      std::vector<std::pair<std::string, std::string>> merged;
      for (const auto& [k, v] : ctx.env) {
        bool replaced = false;
        for (auto& m : merged) {
          if (m.first == k) {
            m.second = v;
            replaced = true;
          }
        }
        if (!replaced) merged.emplace_back(k, v);
      }
      for (const auto& [k, v] : merged) r.out += k + "=" + v + "\n";
    }
  } else if (base == "cat") {
    if (argv.size() == 1) {
      r.out = in;
    }
    for (size_t j = 1; j < argv.size(); ++j) {
      if (argv[j] == "-") {
        r.out += in;
        continue;
      }
      auto data = ctx.readFile ? ctx.readFile(argv[j]) : std::nullopt;
      if (!data) {
        r.err += "cat: " + argv[j] + ": No such file or directory\n";
        r.exitCode = 1;
      } else {
        r.out += *data;
      }
    }
  } else if (base == "ls") {
    std::string dir = argv.size() > 1 ? argv[1] : "/";
    auto names = ctx.listDir ? ctx.listDir(dir) : std::nullopt;
    if (!names) {
      r.err = "ls: cannot access '" + dir + "': No such file or directory\n";
      r.exitCode = 2;
    } else {
      for (const auto& n : *names) r.out += n + "\n";
    }
  } else if (base == "pwd") {
    r.out = "/\n";
  } else if (base == "true") {
  } else if (base == "false") {
    r.exitCode = 1;
  } else if (base == "sleep") {
    double secs = 0;
    try {
      secs = argv.size() > 1 ? std::stod(argv[1]) : 0;
    } catch (...) {
      r.err = "sleep: invalid time interval\n";
      r.exitCode = 1;
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(std::min(secs, 10.0) * 1000)));
  } else {
    r.exitCode = 127;
    if (shellName.empty()) {
      r.err = "exec: \"" + cmd + "\": executable file not found in $PATH\n";
    } else {
      r.err = shellName + ": 1: " + cmd + ": not found\n";
    }
  }
  return r;
}

// --- a small POSIX-shell subset -----------------------------------------------------------

enum class TokKind { Word, Semi, And, Or, Pipe };
struct Token {
  TokKind kind;
  std::string text;
};

// Splits a script into words and operators, expanding $VAR, ${VAR} and $? (outside single
// quotes). Returns nullopt with `error` set on unbalanced quotes or unsupported syntax.
std::optional<std::vector<Token>> lex(const std::string& s, const ExecContext& ctx, int lastExit,
                                      std::string& error) {
  std::vector<Token> out;
  std::string word;
  bool inWord = false;
  auto flush = [&] {
    if (inWord) out.push_back({TokKind::Word, word});
    word.clear();
    inWord = false;
  };
  auto expand = [&](size_t& i) {
    // s[i] == '$'
    if (i + 1 < s.size() && s[i + 1] == '?') {
      word += std::to_string(lastExit);
      i += 1;
      return;
    }
    std::string name;
    size_t j = i + 1;
    if (j < s.size() && s[j] == '{') {
      size_t close = s.find('}', j);
      if (close == std::string::npos) {
        word += '$';
        return;
      }
      name = s.substr(j + 1, close - j - 1);
      i = close;
    } else {
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) name += s[j++];
      if (name.empty()) {
        word += '$';
        return;
      }
      i = j - 1;
    }
    word += lookupEnv(ctx, name).value_or("");
  };
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\'') {
      size_t close = s.find('\'', i + 1);
      if (close == std::string::npos) {
        error = "Syntax error: Unterminated quoted string";
        return std::nullopt;
      }
      word += s.substr(i + 1, close - i - 1);
      inWord = true;
      i = close;
    } else if (c == '"') {
      inWord = true;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size() && (s[j + 1] == '"' || s[j + 1] == '\\' || s[j + 1] == '$')) {
          word += s[++j];
        } else if (s[j] == '$') {
          expand(j);
        } else {
          word += s[j];
        }
      }
      if (j >= s.size()) {
        error = "Syntax error: Unterminated quoted string";
        return std::nullopt;
      }
      i = j;
    } else if (c == '\\' && i + 1 < s.size()) {
      word += s[++i];
      inWord = true;
    } else if (c == '$') {
      inWord = true;
      expand(i);
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (c == '\n') {
        flush();
        out.push_back({TokKind::Semi, ";"});
      } else {
        flush();
      }
    } else if (c == ';') {
      flush();
      out.push_back({TokKind::Semi, ";"});
    } else if (c == '&' && i + 1 < s.size() && s[i + 1] == '&') {
      flush();
      out.push_back({TokKind::And, "&&"});
      ++i;
    } else if (c == '|' && i + 1 < s.size() && s[i + 1] == '|') {
      flush();
      out.push_back({TokKind::Or, "||"});
      ++i;
    } else if (c == '|') {
      flush();
      out.push_back({TokKind::Pipe, "|"});
    } else if (c == '>' || c == '<' || c == '&' || c == '`' || c == '(' || c == ')') {
      error = "Syntax error: \"";
      error += c;
      error += "\" is not supported by this simulated shell";
      return std::nullopt;
    } else {
      word += c;
      inWord = true;
    }
  }
  flush();
  return out;
}

ExecResult runScript(const std::string& script, const ExecContext& ctx, const std::string& in) {
  ExecResult total;
  std::string error;
  // Lexing happens once up front: $? expands to the status before the script (0), a known
  // simplification.
  auto toks = lex(script, ctx, 0, error);
  if (!toks) {
    total.err = "sh: 1: " + error + "\n";
    total.exitCode = 2;
    return total;
  }
  int last = 0;
  TokKind pendingOp = TokKind::Semi;
  size_t i = 0;
  bool stdinUsed = false;
  while (i < toks->size()) {
    // One pipeline: words separated by |.
    std::vector<std::vector<std::string>> pipeline(1);
    while (i < toks->size() && (*toks)[i].kind != TokKind::Semi && (*toks)[i].kind != TokKind::And &&
           (*toks)[i].kind != TokKind::Or) {
      if ((*toks)[i].kind == TokKind::Pipe) {
        pipeline.emplace_back();
      } else {
        pipeline.back().push_back((*toks)[i].text);
      }
      ++i;
    }
    bool run = pendingOp == TokKind::Semi || (pendingOp == TokKind::And && last == 0) ||
               (pendingOp == TokKind::Or && last != 0);
    if (run && !(pipeline.size() == 1 && pipeline[0].empty())) {
      std::string data = stdinUsed ? std::string() : in;
      stdinUsed = true;
      for (const auto& argv : pipeline) {
        if (argv.empty()) {
          total.err += "sh: 1: Syntax error: \"|\" unexpected\n";
          total.exitCode = 2;
          return total;
        }
        if (argv[0] == "exit") {
          int code = last;
          if (argv.size() > 1) {
            try {
              code = std::stoi(argv[1]) & 255;
            } catch (...) {
              total.err += "sh: 1: exit: Illegal number: " + argv[1] + "\n";
              code = 2;
            }
          }
          total.exitCode = code;
          return total;
        }
        ExecResult r = argv[0] == "sh" || argv[0] == "/bin/sh" || argv[0] == "bash"
                           ? runCommand(argv, ctx, data)
                           : runBuiltin(argv, ctx, data, "sh");
        total.err += r.err;
        data = r.out;
        last = r.exitCode;
      }
      total.out += data;
    }
    if (i < toks->size()) pendingOp = (*toks)[i++].kind;
  }
  total.exitCode = last;
  return total;
}

bool isShell(const std::string& cmd) {
  return cmd == "sh" || cmd == "/bin/sh" || cmd == "bash" || cmd == "/bin/bash";
}

}  // namespace

bool commandReadsStdin(const std::vector<std::string>& argv) {
  if (argv.empty()) return false;
  if (argv[0] == "cat" || argv[0] == "/bin/cat") {
    if (argv.size() == 1) return true;
    for (size_t i = 1; i < argv.size(); ++i) {
      if (argv[i] == "-") return true;
    }
    return false;
  }
  if (isShell(argv[0])) {
    if (argv.size() < 3 || argv[1] != "-c") return true;  // an interactive shell reads stdin
    const std::string& s = argv[2];
    // "cat" as a whole word with no file argument after it.
    for (size_t p = s.find("cat"); p != std::string::npos; p = s.find("cat", p + 1)) {
      bool startOk = p == 0 || std::string(" ;|&").find(s[p - 1]) != std::string::npos;
      size_t e = p + 3;
      bool endOk = e == s.size() || std::string(" ;|&").find(s[e]) != std::string::npos;
      if (!startOk || !endOk) continue;
      size_t q = s.find_first_not_of(' ', e);
      if (q == std::string::npos || std::string(";|&").find(s[q]) != std::string::npos || s[q] == '-') {
        return true;
      }
    }
  }
  return false;
}

ExecResult runCommand(const std::vector<std::string>& argv, const ExecContext& ctx,
                      const std::string& stdinData) {
  if (argv.empty()) {
    ExecResult r;
    r.exitCode = 127;
    r.err = "exec: no command given\n";
    return r;
  }
  if (isShell(argv[0])) {
    if (argv.size() >= 3 && argv[1] == "-c") return runScript(argv[2], ctx, stdinData);
    if (argv.size() == 1) return runScript(stdinData, ctx, "");  // script on stdin
    ExecResult r;
    r.exitCode = 2;
    r.err = argv[0] + ": only `" + argv[0] + " -c SCRIPT` is simulated\n";
    return r;
  }
  if (argv[0] == "exit") {
    ExecResult r;
    try {
      r.exitCode = argv.size() > 1 ? std::stoi(argv[1]) & 255 : 0;
    } catch (...) {
      r.exitCode = 2;
    }
    return r;
  }
  return runBuiltin(argv, ctx, stdinData, "");
}

}  // namespace strait::minicluster
