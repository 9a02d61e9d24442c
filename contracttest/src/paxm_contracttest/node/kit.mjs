// What the Node tests of generated plugin files share; run_node_file_tests (node_plugin.py) hands
// a test script this module's URL in PAXM_NODE_KIT, the generated files in PAXM_GENERATED_FILES
// ({case: path}) and the captured hook arguments in PAXM_NODE_FIXTURES.
import { readFileSync, existsSync, rmSync, mkdirSync } from "node:fs";
import { join } from "node:path";

export const FILES = JSON.parse(process.env.PAXM_GENERATED_FILES);
export const FIXTURES = process.env.PAXM_NODE_FIXTURES;
// where fake_hook.mjs records each call (one <event>.jsonl per event)
export const LOG = process.env.FAKE_HOOK_LOG;
export const fixture = (name) => JSON.parse(readFileSync(join(FIXTURES, name + ".json"), "utf8"));
export const clone = (value) => JSON.parse(JSON.stringify(value));

export const RECALL = '<paxm-recall version="1" mode="passive">\nRelevant memory recalled by paxm:\n- release branches are KESTREL-42\n</paxm-recall>';
export const IDENTITY = '<paxm-session-identity version="1">\n{"user_id":"u"}\n</paxm-session-identity>';

// the calls fake_hook.mjs recorded for `event`, each with its stdin parsed as `payload`
export function calls(event) {
  const path = join(LOG, event + ".jsonl");
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8").trim().split("\n").filter(Boolean).map((line) => {
    const entry = JSON.parse(line);
    return { ...entry, payload: JSON.parse(entry.stdin) };
  });
}

// before each test: an empty log, and the fake hook answering as a working paxm would (recall for
// prompts, the identity block at session start, nothing for the other events)
export function resetHooks() {
  rmSync(LOG, { recursive: true, force: true });
  mkdirSync(LOG, { recursive: true });
  process.env.FAKE_HOOK_MODE = "ok";
  process.env.FAKE_HOOK_OUT_USER_INPUT = RECALL;
  process.env.FAKE_HOOK_OUT_SESSION_START = IDENTITY;
  process.env.FAKE_HOOK_OUT_TURN_END = "";
  process.env.FAKE_HOOK_OUT_TOOL_USE = "";
}
