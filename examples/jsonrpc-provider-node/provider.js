#!/usr/bin/env node
// A paxm JSON-RPC provider (protocol v1) in Node.js, standard library only.
//
// paxm starts this program once per request, writes one JSON-RPC request line to stdin and
// reads one response from stdout. State therefore lives in a JSON file, named by the
// PAXM_SAMPLE_PROVIDER_STORE environment variable (default ./paxm-node-provider.json).
// Diagnostics go to stderr; stdout carries only the response.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");

const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;

class RpcError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

function storePath() {
  const value = (process.env.PAXM_SAMPLE_PROVIDER_STORE || "").trim();
  return value || "paxm-node-provider.json";
}

function load() {
  let data;
  try {
    data = fs.readFileSync(storePath(), "utf8");
  } catch (err) {
    if (err.code === "ENOENT") return { items: {} };
    throw err;
  }
  const parsed = JSON.parse(data);
  if (!parsed.items || typeof parsed.items !== "object") parsed.items = {};
  return parsed;
}

function save(store) {
  const file = storePath();
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(store, null, 2) + "\n", { mode: 0o600 });
  fs.renameSync(tmp, file); // atomic: concurrent readers see the old or the new file
}

// paxm may run several requests at once; serialize read-modify-write with a lock file.
function withLock(fn) {
  const lock = `${storePath()}.lock`;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let attempt = 0; ; attempt++) {
    try {
      fs.closeSync(fs.openSync(lock, "wx", 0o600));
      break;
    } catch (err) {
      if (err.code !== "EEXIST") throw err;
      try {
        if (Date.now() - fs.statSync(lock).mtimeMs > 10000) fs.rmSync(lock, { force: true }); // stale
      } catch (_) {}
      if (attempt > 2000) throw new Error("store is locked");
      Atomics.wait(pause, 0, 0, 5);
    }
  }
  try {
    return fn();
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function stringMap(value, what) {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw new RpcError(INVALID_PARAMS, `${what} must be an object of strings`);
  const out = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item !== "string") throw new RpcError(INVALID_PARAMS, `${what}.${key} must be a string`);
    out[key] = item;
  }
  return out;
}

function checkItem(item) {
  if (!isObject(item)) throw new RpcError(INVALID_PARAMS, "memory item must be an object");
  if (typeof item.text !== "string" || item.text.trim() === "") {
    throw new RpcError(INVALID_PARAMS, "text is required");
  }
  if (item.id !== undefined && typeof item.id !== "string") throw new RpcError(INVALID_PARAMS, "id must be a string");
  return {
    id: (item.id || "").trim(),
    text: item.text,
    source: typeof item.source === "string" ? item.source : "",
    metadata: stringMap(item.metadata, "metadata"),
    created_at: typeof item.created_at === "string" && item.created_at ? item.created_at : new Date().toISOString(),
    tier: item.tier === "stm" ? "stm" : item.tier ? "ltm" : "",
    expires_at: typeof item.expires_at === "string" ? item.expires_at : "",
    origin: isObject(item.origin) ? item.origin : {},
    scope: isObject(item.scope) ? item.scope : {},
  };
}

function put(store, raw) {
  const item = checkItem(raw);
  if (!item.id) {
    do {
      item.id = `node-${Date.now()}-${crypto.randomBytes(4).toString("hex")}`;
    } while (store.items[item.id]);
  }
  store.items[item.id] = item;
  return { id: item.id };
}

function terms(text) {
  return new Set(text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean));
}

// Relevance is the share of query terms found in the memory: higher is better, in [0, 1].
// The raw count is kept as raw_score so paxm can show what the backend actually measured.
function search(store, query) {
  if (!isObject(query) || typeof query.text !== "string") throw new RpcError(INVALID_PARAMS, "text is required");
  const filters = stringMap(query.filters, "filters"); // metadata is context, never a filter
  const tiers = Array.isArray(query.tiers) ? query.tiers : [];
  const limit = Number.isInteger(query.limit) && query.limit > 0 ? query.limit : 10;
  const wanted = terms(query.text);
  const now = Date.now();
  const hits = [];
  for (const item of Object.values(store.items)) {
    if (item.expires_at && Date.parse(item.expires_at) <= now) continue;
    if (tiers.length && !tiers.includes(item.tier || "ltm")) continue;
    if (Object.entries(filters).some(([key, want]) => item.metadata[key] !== want)) continue;
    const have = terms(item.text);
    let matched = 0;
    for (const term of wanted) if (have.has(term)) matched++;
    if (wanted.size && matched === 0) continue;
    const relevance = wanted.size ? matched / wanted.size : 1;
    const hit = {
      id: item.id, text: item.text, relevance, score: relevance,
      raw_score: matched, raw_score_kind: "node_term_matches",
      metadata: item.metadata, created_at: item.created_at, origin: item.origin, scope: item.scope,
    };
    if (item.source) hit.source = item.source;
    if (item.tier) hit.tier = item.tier;
    if (item.expires_at) hit.expires_at = item.expires_at;
    hits.push(hit);
  }
  hits.sort((a, b) => b.relevance - a.relevance || String(b.created_at).localeCompare(String(a.created_at)));
  return hits.slice(0, limit);
}

function dispatch(method, params) {
  switch (method) {
    case "paxm.health":
      load(); // fails loudly if the store is unreadable
      return { ok: true };
    case "paxm.capabilities":
      return { put_batch: true, delete: true, attribution: true };
    case "paxm.put":
      return withLock(() => {
        const store = load();
        const ref = put(store, params);
        save(store);
        return { ref };
      });
    case "paxm.putBatch":
      if (!isObject(params) || !Array.isArray(params.items)) throw new RpcError(INVALID_PARAMS, "items must be a list");
      return withLock(() => {
        const store = load();
        const refs = params.items.map((item) => put(store, item)); // all or nothing: saved once
        save(store);
        return { refs };
      });
    case "paxm.search":
      return { hits: search(load(), params) };
    case "paxm.delete":
      if (!isObject(params) || typeof params.id !== "string" || !params.id.trim()) {
        throw new RpcError(INVALID_PARAMS, "ref id is required");
      }
      return withLock(() => {
        const store = load();
        const deleted = Object.prototype.hasOwnProperty.call(store.items, params.id);
        delete store.items[params.id];
        save(store);
        return { deleted };
      });
    default:
      throw new RpcError(METHOD_NOT_FOUND, `method not found: ${method}`);
  }
}

function respond(frame) {
  process.stdout.write(JSON.stringify(frame) + "\n", () => process.exit(0));
}

function handle(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (err) {
    process.stderr.write(`decode request: ${err.message}\n`);
    process.exit(1);
  }
  const id = request.id;
  try {
    const result = dispatch(request.method, request.params);
    respond({ jsonrpc: "2.0", id, result });
  } catch (err) {
    const code = err instanceof RpcError ? err.code : INTERNAL_ERROR;
    if (code === INTERNAL_ERROR) process.stderr.write(`${err.stack || err}\n`);
    respond({ jsonrpc: "2.0", id, error: { code, message: err.message } });
  }
}

let input = "";
let handled = false;
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  input += chunk;
  const newline = input.indexOf("\n");
  if (!handled && newline >= 0) {
    handled = true;
    handle(input.slice(0, newline));
  }
});
process.stdin.on("end", () => {
  if (!handled) {
    handled = true;
    handle(input);
  }
});
