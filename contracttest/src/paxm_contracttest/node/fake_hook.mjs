// Stands in for paxm's hook client in the Node tests: records its argv and stdin, then answers
// as $FAKE_HOOK_MODE says (ok: print $FAKE_HOOK_OUT_<EVENT>; fail: print it but exit 1;
// hang: never answer).
import { appendFileSync } from "node:fs";
import { join } from "node:path";

const event = process.argv[2] || "";
const mode = process.env.FAKE_HOOK_MODE || "ok";
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  appendFileSync(join(process.env.FAKE_HOOK_LOG, event + ".jsonl"), JSON.stringify({ event, stdin: input }) + "\n");
  const out = process.env["FAKE_HOOK_OUT_" + event.toUpperCase()] || "";
  if (mode === "hang") {
    setTimeout(() => {}, 600000);
    return;
  }
  process.stdout.write(out);
  process.exitCode = mode === "fail" ? 1 : 0;
});
