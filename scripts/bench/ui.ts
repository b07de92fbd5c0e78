// Web UI benchmark: `node --import tsx scripts/bench/ui.ts` (needs
// /usr/bin/chromium; uses the built binary, CAIRN_E2E_BIN or dist/cairn).
// Prints the UI's size (each file raw and gzip -9, and the deflated asset
// in the executable), then the time to first meaningful paint of the
// services page with 10,000 services: a `cairn agent -dev` holding them, a
// fresh browser context per run (nothing cached), and the time from
// navigation start until the list shows its rows and the count of all
// services, as performance.now() in the page. Also the first contentful
// paint. CAIRN_BENCH_RUNS (default 5) runs; median and range.
// Targets (issue #23): <= 1 s, <= 200 KiB compressed.
import { gzipSync } from "node:zlib";
import { buildUiAsset, buildUiFiles } from "../build_ui.ts";
import { browserMissing, launchBrowser } from "../e2e/_browser.ts";
import { root, startDevAgent } from "../e2e/harness.ts";

const runs = Number(process.env.CAIRN_BENCH_RUNS ?? 5);
const serviceCount = 10_000;

const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
let rawTotal = 0;
let gzTotal = 0;
for (const [name, f] of await buildUiFiles(root)) {
  const gz = gzipSync(f.body, { level: 9 }).length;
  rawTotal += f.body.length;
  gzTotal += gz;
  console.log(`${name.padEnd(16)} ${kib(f.body.length).padStart(10)} raw ${kib(gz).padStart(10)} gzip`);
}
console.log(`${"total".padEnd(16)} ${kib(rawTotal).padStart(10)} raw ${kib(gzTotal).padStart(10)} gzip; in the executable (one deflated asset): ${kib((await buildUiAsset(root)).length)}`);

const missing = browserMissing();
if (missing) {
  console.log(`first meaningful paint: skipped, ${missing}`);
  process.exit(0);
}

const [browser, agent] = await Promise.all([launchBrowser(), startDevAgent()]);
try {
  const txn = async (ops: unknown[]) => {
    const r = await fetch(`${agent.http}/v1/txn`, { method: "PUT", body: JSON.stringify(ops) });
    if (r.status !== 200) throw new Error(`txn: ${r.status} ${await r.text()}`);
  };
  await txn([{ Node: { Verb: "set", Node: { Node: "bulk", Address: "10.1.0.1" } } }]);
  const batches: unknown[][] = [];
  for (let i = 0; i < serviceCount; i += 128) {
    batches.push(Array.from({ length: Math.min(128, serviceCount - i) }, (_, k) => {
      const id = `svc-${String(i + k).padStart(5, "0")}`;
      return { Service: { Verb: "set", Node: "bulk", Service: { ID: id, Service: id, Port: 1000 + ((i + k) % 50_000), Tags: ["t"] } } };
    }));
  }
  for (let i = 0; i < batches.length; i += 8) await Promise.all(batches.slice(i, i + 8).map(txn));

  const meaningful: number[] = [];
  const contentful: number[] = [];
  for (let run = 0; run < runs; run++) {
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${agent.http}/ui/#/dc1/services`);
    const at = await page.waitForFunction((n) => {
      const s = document.querySelector(".summary")?.textContent;
      return s === `${n} services` && document.querySelector(".vrow[data-service]") ? performance.now() : false;
    }, serviceCount + 1, { timeout: 30_000, polling: "raf" });
    meaningful.push(await at.jsonValue() as number);
    contentful.push(await page.evaluate(() => performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? NaN));
    await context.close();
  }
  const show = (xs: number[]) => {
    const s = [...xs].sort((x, y) => x - y);
    return `median ${s[Math.floor(s.length / 2)]!.toFixed(0)} ms (${s[0]!.toFixed(0)}–${s.at(-1)!.toFixed(0)} ms)`;
  };
  console.log(`services page, ${serviceCount} services, ${runs} runs: first meaningful paint (rows and count shown) ${show(meaningful)}; first contentful paint ${show(contentful)}`);
} finally {
  await browser.close();
  await agent.stop();
}
