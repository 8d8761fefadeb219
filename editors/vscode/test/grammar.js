// Tokenizes .te files with the TextMate grammar, through vscode-textmate and
// vscode-oniguruma (the engine VS Code itself uses), and checks that every
// comment, string, keyword, number, dtype and reduction is scoped. Usage:
//   node test/grammar.js FILE.te...
// It prints one line per file and exits 1 if any token is scoped wrongly.
"use strict";
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const root = path.join(__dirname, "..");
const wasm = fs.readFileSync(path.join(root, "node_modules", "vscode-oniguruma", "release", "onig.wasm")).buffer;
const onigLib = oniguruma.loadWASM(wasm).then(() => ({
  createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
  createOnigString: (s) => new oniguruma.OnigString(s),
}));
const registry = new vsctm.Registry({
  onigLib,
  loadGrammar: async (scopeName) => {
    if (scopeName !== "source.te") return null;
    const file = path.join(root, "syntaxes", "te.tmLanguage.json");
    return vsctm.parseRawGrammar(fs.readFileSync(file, "utf8"), file);
  },
});

const keywords = new Set(["import", "const", "fn", "model", "input", "param", "output", "for", "in", "return", "where"]);
const dtypes = new Set(["f32", "f16", "bf16", "i32", "bool"]);

// expected returns the scope a token's text needs (a prefix of one of its
// scopes), or "" when any scope will do.
function expected(text, next) {
  if (keywords.has(text)) return ["keyword", "storage"];
  if (dtypes.has(text)) return ["storage.type"];
  if (/^\d+$/.test(text)) return ["constant.numeric.integer"];
  if (/^\d+\.\d+([eE][-+]?\d+)?$|^\d+[eE][-+]?\d+$/.test(text)) return ["constant.numeric.float"];
  if (/^(sum|max|min|prod)$/.test(text) && /^\s*\[/.test(next)) return ["keyword.operator.reduction"];
  return null;
}

async function main() {
  const grammar = await registry.loadGrammar("source.te");
  let failed = false;
  const totals = { files: 0, lines: 0, comments: 0, strings: 0, keywords: 0, numbers: 0, reductions: 0 };
  for (const file of process.argv.slice(2)) {
    const lines = fs.readFileSync(file, "utf8").split("\n");
    let state = vsctm.INITIAL;
    const counts = { comments: 0, strings: 0, keywords: 0, numbers: 0, reductions: 0 };
    const errors = [];
    lines.forEach((line, i) => {
      const r = grammar.tokenizeLine(line, state);
      state = r.ruleStack;
      const hash = line.indexOf("#");
      for (const tok of r.tokens) {
        const text = line.slice(tok.startIndex, tok.endIndex);
        const scopes = tok.scopes.join(" ");
        const inComment = scopes.includes("comment.");
        if (inComment) {
          if (tok.startIndex === hash) counts.comments++;
          continue;
        }
        if (scopes.includes("string.quoted")) {
          counts.strings++;
          continue;
        }
        if (hash >= 0 && tok.startIndex >= hash && !line.slice(0, hash).includes('"')) {
          errors.push(`${file}:${i + 1}:${tok.startIndex + 1}: ${JSON.stringify(text)} after # is not a comment (${scopes})`);
          continue;
        }
        // A token may hold several words (spaces included); check each.
        const re = /[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?/g;
        let m;
        while ((m = re.exec(text)) !== null) {
          const want = expected(m[0], line.slice(tok.startIndex + m.index + m[0].length));
          if (!want) continue;
          if (!want.some((w) => tok.scopes.some((s) => s.startsWith(w)))) {
            errors.push(`${file}:${i + 1}:${tok.startIndex + m.index + 1}: ${JSON.stringify(m[0])} is scoped ${scopes}, want ${want.join(" or ")}`);
            continue;
          }
          if (want[0] === "keyword.operator.reduction") counts.reductions++;
          else if (want[0].startsWith("constant.numeric")) counts.numbers++;
          else if (keywords.has(m[0])) counts.keywords++;
        }
      }
    });
    totals.files++;
    totals.lines += lines.length;
    for (const k of Object.keys(counts)) totals[k] += counts[k];
    console.log(`${path.basename(file)}: ${lines.length} lines, ${counts.comments} comments, ${counts.strings} strings, ` +
      `${counts.keywords} keywords, ${counts.numbers} numbers, ${counts.reductions} reductions: ${errors.length ? "FAIL" : "ok"}`);
    for (const e of errors.slice(0, 20)) console.log("  " + e);
    if (errors.length) failed = true;
  }
  console.log(`total: ${JSON.stringify(totals)}`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
