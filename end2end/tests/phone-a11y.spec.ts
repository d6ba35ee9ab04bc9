// Every page at phone width (390 px) and through axe-core: the sections fold behind Menu, no
// page scrolls sideways, every control is at least 44 px tall, and axe finds no serious or
// critical violation on any page (desktop and phone). Runs after dashboard.spec.ts (files run
// in name order) and signs in as its operator, or sets one up when run alone.
import { test, expect, Page, Browser } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { createHmac } from 'node:crypto';
import { signIn } from './operator';

const shots = '../docs/screenshots';

test.describe.configure({ mode: 'serial' });

let page: Page;
let pages: string[] = [];

test.beforeAll(async ({ browser }) => {
  page = await (await browser.newContext()).newPage();
  await signIn(page);
  await page.goto('/settings');
  await page.getByLabel('New token named').fill('phone-e2e');
  await page.getByRole('button', { name: 'Create token' }).click();
  const token = (await page.locator('#new-token pre.token').textContent()) ?? '';
  const api = { headers: { Authorization: `Bearer ${token}` } };
  await page.request.post('/api/templates', { ...api, data: { name: 'courier', description: 'Carries messages', tools: ['tasks.*', 'system_time', 'memory.*', 'memory_semantic.*', 'knowledge.*', 'browser.*', 'process.*', 'skills.*', 'notify_owner'] } });
  const agent = (await (await page.request.post('/api/agents', { ...api, data: { template: 'courier' } })).json()).id;
  await page.request.post('/api/tasks', { ...api, data: { title: 'Deliver the parcel', assignee: 'courier' } });
  await page.request.post(`/api/agents/${agent}/tools/schedule_create/invoke`, { ...api, data: { args: { when: '+1h', prompt: 'Check the door' } } });
  const invoke = (tool: string, args: object) => page.request.post(`/api/agents/${agent}/tools/${tool}/invoke`, { ...api, data: { args } });
  await invoke('memory_store', { key: 'door.code', value: 'The side door opens with 4471 after 6 pm; the front desk has the spare key.' });
  await invoke('memory_semantic_add', { content: 'Parcels for the third floor go to the mail room before noon.' });
  await invoke('knowledge_add_entity', { name: 'mail room', type: 'place' });
  await invoke('knowledge_add_entity', { name: 'parcel', type: 'thing', attributes: { floor: 3 } });
  await invoke('knowledge_add_relation', { from: 'parcel', to: 'mail room', type: 'delivered_to' });
  for (const [tool, args] of [['browser_navigate', { url: 'http://127.0.0.1:4600/login' }], ['browser_screenshot', {}]] as const) {
    const answer = await invoke(tool, args);
    expect(answer.ok(), `${tool}: ${await answer.text()}`).toBeTruthy();
  }
  for (const [tool, args] of [
    ['skill_evolve_create', { name: 'deliveries', manifest: { description: 'How parcels reach their floor.', version: '1.0', tags: ['mail', 'routing'] }, body: '# Deliveries\n\n1. Read the label.\n2. Take third-floor parcels to the mail room before noon.\n' }],
    ['skill_evolve_patch', { name: 'deliveries', old: '1. Read the label.', new: '1. Read the label and the floor.' }],
    ['skill_evolve_write_file', { skill: 'deliveries', path: 'references/floors.md', body: 'Floor 3: mail room, east wing.\n' }],
  ] as const) {
    const answer = await invoke(tool, args);
    expect(answer.ok(), `${tool}: ${await answer.text()}`).toBeTruthy();
  }
  // Once another type lists the skill, the courier's change waits for an operator: a proposal
  // with its diff and Accept / Reject on both skill pages.
  await page.request.post('/api/templates', { ...api, data: { name: 'mailroom', skills: ['deliveries'] } });
  const proposed = await invoke('skill_evolve_patch', { name: 'deliveries', old: 'before noon', new: 'before 11 am' });
  expect((await proposed.json()).content.proposed, await proposed.text()).toBe(true);
  const noted = await invoke('notify_owner', { reason: 'Parcel left at the front desk', summary: 'Nobody answered on floor 3; the parcel is at the front desk until 6 pm.', urgency: 'high' });
  expect(noted.ok(), await noted.text()).toBeTruthy();
  // Two people in the lobby group on the webhook channel serve.sh configures.
  for (const [id, name, text] of [['m1', 'Ann Example', 'Is the parcel for floor 3 here?'], ['m2', 'Bob', 'It came this morning.']]) {
    const body = JSON.stringify({ id, chat_id: 'lobby-group', title: 'Lobby', group: true, text, user: { id: name.toLowerCase().replace(' ', '-'), name } });
    const timestamp = Math.floor(Date.now() / 1000).toString();
    const signature = 'sha256=' + createHmac('sha256', 'e2e-channel-secret').update(`${timestamp}.${body}`).digest('hex');
    const posted = await page.request.post('/channels/lobby/inbound', { headers: { 'X-Kennel-Timestamp': timestamp, 'X-Kennel-Signature-256': signature, 'Content-Type': 'application/json' }, data: body });
    expect(posted.ok(), await posted.text()).toBeTruthy();
  }
  const started = await invoke('process_start', { command: 'echo "watching src/ for changes"; echo "warning: 2 files skipped" >&2; sleep 300' });
  expect(started.ok(), await started.text()).toBeTruthy();
  pages = ['/', '/agents', `/agents/${agent}`, `/agents/${agent}/memory`, `/agents/${agent}/memory?q=parcels+floor`,
           `/agents/${agent}/knowledge`, `/agents/${agent}/knowledge?entity=parcel`, `/agents/${agent}/browser`, `/agents/${agent}/processes`, '/agent-types', '/agent-types/courier', '/tools', `/tools?agent=${agent}`,
           '/tasks', '/schedules', '/canvas', '/usage', '/audit', '/audit/actions', '/agent-types/courier/apply', '/settings', '/skills', '/skills/deliveries', '/channels', '/channels/lobby', '/inbox', '/approvals', '/approvals?status=all', '/mcp', '/cluster', '/providers', '/providers/fake', '/api-reference', '/no/such/page'];
});

test.afterAll(async () => {
  await page.context().close();
});

async function seriousViolations(p: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page: p }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${p.url()}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(' | ')}`);
}

test('axe-core finds no serious or critical violation on any page at desktop width', async () => {
  const found: string[] = [];
  for (const path of pages) {
    await page.goto(path);
    found.push(...(await seriousViolations(page)));
    const shot = path.match(/\/(memory|knowledge|browser|processes)$/);
    if (shot) await page.screenshot({ path: `${shots}/agent-${shot[1]}.png`, fullPage: true });
    if (path === '/skills/deliveries') await page.screenshot({ path: `${shots}/skill.png`, fullPage: true });
    if (path === '/inbox') await page.screenshot({ path: `${shots}/inbox.png`, fullPage: true });
    if (path === '/mcp') await page.screenshot({ path: `${shots}/mcp.png`, fullPage: true });
    if (path === '/cluster') await page.screenshot({ path: `${shots}/cluster.png`, fullPage: true });
    if (path === '/providers/fake') await page.screenshot({ path: `${shots}/provider.png`, fullPage: true });
    if (path === '/channels/lobby') await page.screenshot({ path: `${shots}/channel.png`, fullPage: true });
  }
  expect(found).toEqual([]);
});

test('the dark theme follows the system and keeps the main pages readable', async ({ browser }) => {
  const context = await browser.newContext({ colorScheme: 'dark', storageState: await page.context().storageState() });
  const dark = await context.newPage();
  const found: string[] = [];
  for (const path of ['/', '/agents', pages[2], '/agent-types/courier', '/tools', '/tasks', '/schedules', '/inbox', '/skills/deliveries', '/audit', '/settings']) {
    await dark.goto(path);
    found.push(...(await seriousViolations(dark)));
  }
  expect(await dark.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(15, 20, 25)');
  await dark.goto(pages[2]);
  await dark.screenshot({ path: `${shots}/agent-dark.png`, fullPage: true });
  await context.close();
  expect(found).toEqual([]);
});

test('the navigation fits one row at 1280 px, with the favicon', async () => {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('/');
  const rows = await page.locator('nav.sections a').evaluateAll((links) =>
    new Set(links.map((a) => Math.round(a.getBoundingClientRect().top))).size);
  expect(rows).toBe(1);
  const icon = await page.locator('link[rel=icon]').getAttribute('href');
  expect((await page.request.get(icon!)).headers()['content-type']).toBe('image/svg+xml');
});

async function phone(browser: Browser): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, storageState: await page.context().storageState() });
  return context.newPage();
}

test('at phone width the sections fold behind Menu, nothing scrolls sideways, every control is tappable', async ({ browser }) => {
  const small = await phone(browser);
  const found: string[] = [];
  for (const path of pages) {
    await small.goto(path);
    const overflow = await small.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, `${path} scrolls sideways`).toBeLessThanOrEqual(0);
    const tooSmall = await small.evaluate(() => [...document.querySelectorAll('main button, main select, main input:not([type=hidden]):not([type=checkbox]), header label, header button')]
      .filter((e) => (e as HTMLElement).offsetParent !== null && e.getBoundingClientRect().height < 44)
      .map((e) => `${e.tagName.toLowerCase()} "${(e.textContent ?? '').trim().slice(0, 30)}" ${Math.round(e.getBoundingClientRect().height)}px`));
    expect(tooSmall, `${path} has controls under 44 px`).toEqual([]);
    found.push(...(await seriousViolations(small)));
  }
  expect(found).toEqual([]);

  await small.goto('/');
  await expect(small.locator('nav.sections')).toBeHidden();
  await small.screenshot({ path: `${shots}/overview-phone.png`, fullPage: true });
  await small.getByText('Menu').click();
  await expect(small.locator('nav.sections')).toBeVisible();
  const links = await small.locator('nav.sections a').evaluateAll((as) => as.map((a) => a.getBoundingClientRect().height));
  expect(Math.min(...links)).toBeGreaterThanOrEqual(44);
  await small.screenshot({ path: `${shots}/menu-phone.png` });
  await small.locator('nav.sections').getByRole('link', { name: 'Tasks', exact: true }).click();
  await expect(small.getByRole('heading', { name: 'Task board' })).toBeVisible();
  // Every column of the board is within the screen's width (stacked), none hidden to the right.
  for (const column of ['pending', 'claimed', 'done', 'failed', 'cancelled']) {
    const box = await small.locator(`#column-${column}`).boundingBox();
    expect(box, `the ${column} column is shown`).not.toBeNull();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width, `the ${column} column fits`).toBeLessThanOrEqual(390);
  }
  await small.screenshot({ path: `${shots}/tasks-phone.png`, fullPage: true });
  await small.goto(pages[2]);
  await small.screenshot({ path: `${shots}/agent-phone.png`, fullPage: true });
  await small.context().close();
});
