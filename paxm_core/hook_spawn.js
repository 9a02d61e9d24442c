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
