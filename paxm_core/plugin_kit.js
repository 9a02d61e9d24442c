// What paxm's generated JS/TS plugins share (each template includes it once, at top level).

// A warn(...args) that writes to stderr only when `debug` (the harness's own output stays clean).
function warner(debug) {
  return (...args) => {
    if (!debug) return;
    try {
      console.error("paxm:", ...args);
    } catch {}
  };
}

// Sessions whose state is kept (a long-lived harness process sees many).
const MAX_SESSIONS = 64;

// Sets `key` in `map` as its newest entry, dropping the oldest beyond MAX_SESSIONS.
function remember(map, key, value = true) {
  map.delete(key);
  map.set(key, value);
  while (map.size > MAX_SESSIONS) map.delete(map.keys().next().value);
}

// `fn` wrapped so an error in here never reaches the harness; with `debug` each call's duration
// is written to stderr (`paxm: timing <name> <ms> ms`).
function guarded(warn, debug, name, fn) {
  return async (...args) => {
    const began = debug ? performance.now() : 0;
    try {
      return await fn(...args);
    } catch (error) {
      warn("hook error", name, error);
      return undefined;
    } finally {
      if (debug) warn("timing", name, (performance.now() - began).toFixed(1), "ms");
    }
  };
}

// The visible text of a message's content (a string or parts): its text parts, trimmed, joined
// by blank lines; never thinking/reasoning or tool-call parts.
function textParts(content) {
  if (typeof content === "string") return content.trim();
  if (!Array.isArray(content)) return "";
  return content
    .filter((p) => p && p.type === "text" && typeof p.text === "string")
    .map((p) => p.text.trim())
    .filter(Boolean)
    .join("\n\n")
    .trim();
}

// Runs one paxm hook client: `argv` with the JSON `payload` on stdin.  Resolves to {ok, stdout}
// (stdout "" unless the client exited 0, at most MAX_OUTPUT characters); never rejects.  A
// `detached` client runs in its own process group, so a capture still reaches paxm when the
// harness exits right after the turn; when `timeoutMs` passes it is killed, or with `letRun`
// left to finish on its own (only the wait ends).
function spawnHook(spawn, argv, payload, { event, timeoutMs, detached, letRun, warn }) {
  return new Promise((resolve) => {
    let out = "";
    let settled = false;
    let child = null;
    let timer = null;
    const finish = (ok) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolve({ ok, stdout: ok ? out : "" });
    };
    try {
      child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "ignore"], env: process.env, detached, windowsHide: true });
    } catch (error) {
      warn(event, "could not start the hook client", error);
      finish(false);
      return;
    }
    timer = setTimeout(() => {
      warn(event, "hook timed out");
      try {
        if (detached && letRun) child.unref();
        else child.kill("SIGKILL");
      } catch {}
      finish(false);
    }, timeoutMs);
    child.on("error", (error) => {
      warn(event, "hook failed", error);
      finish(false);
    });
    child.on("close", (code) => {
      if (code !== 0) warn(event, "hook exited", code);
      finish(code === 0);
    });
    if (child.stdout) {
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk) => {
        if (out.length < MAX_OUTPUT) out += chunk;
      });
      child.stdout.on("error", () => {});
    }
    if (child.stdin) {
      child.stdin.on("error", () => {});
      try {
        child.stdin.end(JSON.stringify(payload) + "\n");
      } catch {}
    }
  });
}
