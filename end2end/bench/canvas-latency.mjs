// See scripts/bench-canvas, which starts the daemon and runs this.
import { chromium } from '@playwright/test';

const base = process.env.BASE;
const auth = { Authorization: `Bearer ${process.env.TOKEN}` };
const rounds = Number(process.env.ROUNDS ?? 300);
const warmup = 20;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--no-first-run'],
});
const page = await browser.newPage({ baseURL: base });
await page.goto('/setup');
await page.getByLabel('Name').fill('bench');
await page.getByLabel('Password').fill('correct horse battery');
await page.getByRole('button', { name: 'Create operator' }).click();
await page.waitForURL(`${base}/`);
const ok = (res) => { if (!res.ok()) throw new Error(`${res.url()}: ${res.status()}`); return res.json(); };
await ok(await page.request.post('/api/templates', { headers: auth, data: { name: 'artist', tools: ['canvas_present'] } }));
const agent = (await ok(await page.request.post('/api/agents', { headers: auth, data: { template: 'artist' } }))).id;
await page.goto(`/agents/${agent}`);
await page.waitForTimeout(300); // the live feed is open

const samples = [];
for (let i = 0; i < warmup + rounds; i++) {
  const ms = await page.evaluate(async ({ agent, auth, i }) => {
    const card = document.querySelector('[data-canvas-live]');
    const shown = new Promise((resolve) => {
      const watch = new MutationObserver(() => {
        const frame = card.querySelector('iframe.canvas');
        if (!frame || frame.dataset.version === undefined) return;
        frame.addEventListener('load', () => requestAnimationFrame(() => resolve(performance.now())), { once: true });
        watch.disconnect();
      });
      watch.observe(card, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-version'] });
    });
    const html = `<!doctype html><h1>Version ${i}</h1><canvas id=c width=200 height=80></canvas>
      <script>document.getElementById('c').getContext('2d').fillRect(0, 0, ${10 + (i % 190)}, 80)</script>`;
    const res = await fetch(`/api/agents/${agent}/tools/canvas_present/invoke`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ args: { html } }),
    });
    if (!res.ok) throw new Error(`invoke: ${res.status}`);
    const returned = performance.now();
    await res.json();
    return (await shown) - returned;
  }, { agent, auth, i });
  if (i >= warmup) samples.push(ms);
}
await browser.close();
samples.sort((a, b) => a - b);
const at = (q) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))].toFixed(1);
console.log(`canvas_present → visible (n = ${samples.length}): p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, p99 ${at(0.99)} ms, max ${samples[samples.length - 1].toFixed(1)} ms`);
