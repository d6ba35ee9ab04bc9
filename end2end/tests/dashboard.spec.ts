// The operator's path through the dashboard, in one browser session, in order: first-run
// setup, sign-in, CSRF, the agent-type editor, the Tools inspector, spawning and chatting.
// Screenshots of each main page go to docs/screenshots/.
import { test, expect, Page } from '@playwright/test';

const shots = '../docs/screenshots';
const fakeLlm = 'http://127.0.0.1:4601';

test.describe.configure({ mode: 'serial' });

let page: Page;
let apiToken = '';
// Every message Chromium logs about the Content-Security-Policy refusing something: the pages
// must need no inline script or style, so there must be none (checked by the last spec).
const cspViolations: string[] = [];

test.beforeAll(async ({ browser }) => {
  page = await browser.newPage();
  page.on('console', (msg) => {
    if (msg.text().includes('Content Security Policy')) cspViolations.push(`${page.url()}: ${msg.text()}`);
  });
});

test.afterAll(async () => {
  await page.close();
});

async function shot(name: string) {
  await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
}

test('first run: the first operator is created on /setup', async () => {
  await page.goto('/');
  await expect(page).toHaveURL(/\/setup$/);
  await expect(page.getByRole('heading', { name: 'Create the first operator' })).toBeVisible();
  await shot('setup');
  await page.getByLabel('Name').fill('ada');
  await page.getByLabel('Password', { exact: true }).fill('correct horse battery');
  await page.getByLabel('The password again').fill('correct horse battery');
  await page.getByRole('button', { name: 'Create operator' }).click();
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
  await expect(page.locator('.who')).toHaveText('ada');
});

test('sign out, a wrong password is refused, the right one signs in', async () => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/login$/);
  await page.getByLabel('Name').fill('ada');
  await page.getByLabel('Password').fill('wrong horse');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toHaveText('unknown operator or wrong password');
  await shot('login');
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
});

test('a form posted without the CSRF token is refused', async () => {
  const response = await page.request.post('/agent-types', { form: { name: 'forged' } });
  expect(response.status()).toBe(403);
  await page.goto('/agent-types');
  await expect(page.getByRole('link', { name: 'forged' })).toHaveCount(0);
});

test('agent type: a validation error next to the field, fixed, then a name conflict', async () => {
  await page.goto('/agent-types');
  const form = page.locator('#type-form');
  await form.getByLabel('Name').fill('Helper Bot');
  await form.getByLabel('Description').fill('Answers questions');
  await form.getByRole('button', { name: 'Create agent type' }).click();
  await expect(page.locator('#name-error')).toContainText('Helper Bot is not a valid name');
  await expect(form.getByLabel('Description')).toHaveValue('Answers questions');
  await form.getByLabel('Name').fill('helper');
  await form.getByRole('button', { name: 'Create agent type' }).click();
  await expect(page.getByRole('heading', { name: 'Agent type helper' })).toBeVisible();
  await expect(page.getByRole('status')).toHaveText('Agent type “helper” created.');
  await shot('agent-type-editor');

  await page.goto('/agent-types');
  await page.locator('#type-form').getByLabel('Name').fill('helper');
  await page.locator('#type-form').getByRole('button', { name: 'Create agent type' }).click();
  await expect(page.locator('#name-error')).toHaveText('an agent type named helper already exists');

  // A type for chatting: a model, the fake provider (the only one configured), one tool.
  await page.locator('#type-form').getByLabel('Name').fill('clock');
  await page.locator('#type-form').getByLabel('Model').fill('fake-model');
  await page.locator('#type-form').getByLabel(/^Other grants/).fill('system_time');
  await page.locator('#type-form').getByRole('button', { name: 'Create agent type' }).click();
  await expect(page.getByRole('heading', { name: 'Agent type clock' })).toBeVisible();
  await page.goto('/agent-types');
  await shot('agent-types');
});

test('a running agent\'s name is a conflict too', async () => {
  await page.goto('/agents');
  await page.locator('#spawn-form select[name=template]').selectOption('helper');
  await page.locator('#spawn-form').getByLabel('Name (optional)').fill('scout');
  await page.locator('#spawn-form').getByRole('button', { name: 'Spawn' }).click();
  await expect(page.getByRole('heading', { name: /scout/ })).toBeVisible();
  await page.goto('/agent-types');
  await page.locator('#type-form').getByLabel('Name').fill('scout');
  await page.locator('#type-form').getByRole('button', { name: 'Create agent type' }).click();
  await expect(page.locator('#name-error')).toContainText('an agent named scout is running');
});

test('Tools inspector: search, grant a family, narrow by standing, try system_time', async () => {
  await page.goto('/tools');
  await expect(page.getByRole('navigation', { name: 'Families' }).getByRole('link', { name: 'tasks' })).toBeVisible();
  await page.getByLabel('Search').fill('artifact');
  await page.getByRole('button', { name: 'Show' }).click();
  await expect(page.locator('details.tool-row')).toHaveCount(1);
  await expect(page.locator('#tool-read_artifact')).toBeVisible();

  await page.getByLabel('Search').fill('');
  await page.getByLabel('As agent').selectOption({ label: 'scout' });
  await page.getByRole('button', { name: 'Show' }).click();
  const clock = page.locator('#tool-system_time');
  await expect(clock.locator(':scope > summary')).toContainText('scout: not granted');
  // A family-wide grant asks first.
  const asked: string[] = [];
  page.once('dialog', (dialog) => { asked.push(dialog.message()); dialog.accept(); });
  await page.getByRole('button', { name: 'Grant system.*' }).click();
  await expect(clock.locator(':scope > summary')).toContainText('scout: allowed by system.*');
  expect(asked[0]).toContain('Grant scout every tool of the system family');
  await page.getByLabel('Standing').selectOption({ label: 'allowed' });
  await page.getByRole('button', { name: 'Show' }).click();
  await expect(page.locator('#tool-task_post')).toHaveCount(0);
  await clock.locator(':scope > summary').click();
  await clock.getByRole('button', { name: 'Try it' }).click();
  await expect(page.locator('#try-result')).toContainText('"utc"');
  await shot('tools');
});

test('spawn an agent and chat: the scripted tool call is visible', async () => {
  await page.goto('/agents');
  await page.locator('#spawn-form select[name=template]').selectOption('clock');
  await page.locator('#spawn-form').getByLabel('Goal (optional)').fill('Tell people the time');
  await page.locator('#spawn-form').getByRole('button', { name: 'Spawn' }).click();
  await expect(page.getByRole('heading', { name: /clock/ })).toBeVisible();

  const script = await page.request.post(`${fakeLlm}/_script`, {
    data: [
      { kind: 'tool_calls', calls: [['system_time', {}]] },
      { kind: 'text', text: 'It is time for tea.' },
    ],
  });
  expect(script.status()).toBe(204);
  await page.getByPlaceholder('Message the agent').fill('What time is it?');
  await page.getByRole('button', { name: 'Send' }).click();
  await expect(page.locator('.chat-log')).toContainText('It is time for tea.');
  await expect(page.locator('.msg.assistant code').first()).toHaveText('system_time');
  // The call is folded with its result (no message of its own for the result).
  await expect(page.locator('.msg.assistant details.call summary')).toContainText('system_time {} ok');
  await expect(page.locator('details.msg.tool')).toHaveCount(0);
  await shot('agent-chat');

  await page.goto('/agents');
  await shot('agents');
});

test('chat streams the reply as the model writes it, then shows the finished message', async () => {
  await page.goto('/agents');
  await page.locator('tbody a', { hasText: 'clock' }).first().click();
  // Model text is hostile like any stored text: markup in it stays text while it streams.
  const words = 'The kettle <b>is</b> on and the tea will be ready in four minutes exactly.';
  const script = await page.request.post(`${fakeLlm}/_script`, {
    data: [{ kind: 'slow_text', text: words, piece_millis: 150 }],
  });
  expect(script.status()).toBe(204);
  await page.getByPlaceholder('Message the agent').fill('Tea?');
  await page.getByRole('button', { name: 'Send' }).click();
  const streaming = page.locator('.msg.streaming p');
  await expect(streaming).toContainText('The kettle');
  // Part of the reply is on the page while the turn still runs.
  await expect(page.locator('#chat-form button[type=submit]')).toBeDisabled();
  expect(await streaming.textContent()).not.toContain('exactly.');
  await expect(streaming).toContainText('<b>is</b>');
  await expect(page.locator('.msg.streaming b')).toHaveCount(0);
  await expect(page.locator('.chat-log .msg.assistant').last()).toContainText(words);
  await expect(page.locator('.msg.streaming')).toHaveCount(0);
});

test('ask_user: the turn waits for the question to be answered in the chat, then goes on', async () => {
  await page.goto('/agent-types');
  await page.locator('#type-form').getByLabel('Name').fill('asker');
  await page.locator('#type-form').getByLabel('Model').fill('fake-model');
  await page.locator('#type-form').getByLabel(/^Other grants/).fill('ask_user');
  await page.locator('#type-form').getByRole('button', { name: 'Create agent type' }).click();
  await expect(page.getByRole('heading', { name: 'Agent type asker' })).toBeVisible();
  await page.goto('/agents');
  await page.locator('#spawn-form select[name=template]').selectOption('asker');
  await page.locator('#spawn-form').getByRole('button', { name: 'Spawn' }).click();
  await expect(page.getByRole('heading', { name: /asker/ })).toBeVisible();

  const script = await page.request.post(`${fakeLlm}/_script`, {
    data: [
      { kind: 'tool_calls', calls: [['ask_user', { question: 'Which <i>colour</i> for the fence?', choices: ['Red', 'Blue'] }]] },
      { kind: 'text', text: 'Blue it is.' },
    ],
  });
  expect(script.status()).toBe(204);
  await page.getByPlaceholder('Message the agent').fill('Paint the fence');
  await page.getByRole('button', { name: 'Send' }).click();
  // The question arrives while the turn waits; its text stays text.
  const asking = page.locator('#questions form.question');
  await expect(asking).toContainText('Which <i>colour</i> for the fence?');
  await expect(asking.locator('i')).toHaveCount(0);
  await expect(page.locator('#chat-form button[type=submit]')).toBeDisabled();
  await shot('ask-user');
  await asking.getByRole('button', { name: 'Blue' }).click();
  await expect(page.locator('.chat-log .msg.assistant').last()).toContainText('Blue it is.');
  const asked = page.locator('.msg.assistant details.call').last();
  await expect(asked.locator('summary')).toContainText('ask_user');
  await expect(asked.locator('summary')).toContainText('ok');
  await expect(asked).toContainText('operator:ada');
  await expect(page.locator('#questions form')).toHaveCount(0);
});

test('usage: per agent, per day and per model as charts, readable without script', async () => {
  await page.goto('/usage');
  await expect(page.getByRole('heading', { name: 'Usage' })).toBeVisible();
  const today = page.locator('#usage-today svg[role=img]');
  await expect(today).toHaveAttribute('aria-label', 'Model use today, per agent');
  // The agents that chatted above are bars, labelled by name, with their tokens beside them.
  await expect(today.locator('text.chart-label', { hasText: 'clock' })).toHaveCount(1);
  await expect(today.locator('text.chart-caption').first()).toContainText('tokens');
  await expect(page.locator('#usage-models svg text.chart-label', { hasText: 'fake / ' }).first()).toBeVisible();
  await page.locator('#usage-today details summary').click();
  await expect(page.locator('#usage-today table')).toContainText('clock');
  await expect(page.locator('#usage-budgets')).toContainText('No budget is set');
  await shot('usage');
  await page.goto('/');
  await expect(page.locator('#activity svg[role=img]')).toHaveAttribute('aria-label', 'Turns and tool calls per hour (UTC)');
});

test('audit, overview and settings', async () => {
  await page.goto('/audit');
  // The chats above called system_time and ask_user: both are in the log.
  for (const tool of ['system_time', 'ask_user']) {
    await expect(page.locator('tbody tr', { hasText: tool }).first()).toContainText('ok');
  }
  await shot('audit');
  await page.goto('/settings');
  await page.getByLabel('New token named').fill('deploy');
  await page.getByRole('button', { name: 'Create token' }).click();
  await expect(page.locator('#new-token pre.token')).toHaveText(/^kn_[0-9a-f]{64}$/);
  apiToken = (await page.locator('#new-token pre.token').textContent()) ?? '';
  await shot('settings');
  await page.goto('/');
  await shot('overview');
});

test('task board: a posted task moves to done', async () => {
  const api = { headers: { Authorization: `Bearer ${apiToken}` } };
  expect((await page.request.post('/api/templates', { ...api, data: { name: 'worker', tools: ['tasks.*'] } })).status()).toBe(201);
  const worker = await (await page.request.post('/api/agents', { ...api, data: { template: 'worker' } })).json();

  await page.goto('/tasks');
  const form = page.locator('#post-task');
  await form.getByLabel('Title').fill('Write the release notes');
  await form.getByLabel('For').selectOption('worker');
  await form.getByLabel('Priority').fill('8');
  await form.getByRole('button', { name: 'Post' }).click();
  await expect(page.locator('#column-pending')).toContainText('Write the release notes');

  const claim = await page.request.post(`/api/agents/${worker.id}/tools/task_claim/invoke`, { ...api, data: { args: {} } });
  const claimed = (await claim.json()).content.claimed;
  expect(claimed.title).toBe('Write the release notes');
  await page.reload();
  await expect(page.locator('#column-claimed')).toContainText('Write the release notes');
  await page.request.post(`/api/agents/${worker.id}/tools/task_complete/invoke`, { ...api, data: { args: { task_id: claimed.id, result: 'Notes written.' } } });
  await page.reload();
  await expect(page.locator('#column-done')).toContainText('Write the release notes');
  await shot('tasks');
  await page.locator('#column-done').getByRole('link', { name: 'Write the release notes' }).click();
  await expect(page.locator('#task-history')).toContainText('claimed by worker');
  await expect(page.locator('.md').last()).toHaveText('Notes written.');
});

test('schedule manager: pause, resume, and a permanent deletion that needs the typed confirmation', async () => {
  const api = { headers: { Authorization: `Bearer ${apiToken}` } };
  expect((await page.request.post('/api/templates', { ...api, data: {
    name: 'reporter', tools: ['schedule.*'],
    cron: [{ schedule: '0 7 * * mon-fri', prompt: 'Send the morning report', timezone: 'Europe/Berlin' }],
  } })).status()).toBe(201);
  const reporter = await (await page.request.post('/api/agents', { ...api, data: { template: 'reporter' } })).json();
  const made = await page.request.post(`/api/agents/${reporter.id}/tools/cron_create/invoke`,
    { ...api, data: { args: { expression: '*/30 * * * *', prompt: 'Check the build queue' } } });
  const job = (await made.json()).content;
  const short = job.id.replace(/-/g, '').slice(-8);

  await page.goto('/schedules');
  const row = page.locator(`#schedule-${job.id}`);
  await expect(row).toContainText('Check the build queue');
  await expect(row).toContainText('*/30 * * * *');
  await expect(page.locator('#schedules')).toContainText('Send the morning report');
  await expect(row.locator('.status')).toHaveText('active');
  await shot('schedules');

  await row.getByRole('button', { name: 'Pause' }).click();
  await expect(page.getByRole('status')).toHaveText(`Schedule ${short} paused.`);
  await expect(row.locator('.status')).toHaveText('paused');
  await row.getByRole('button', { name: 'Resume' }).click();
  await expect(page.getByRole('status')).toHaveText(`Schedule ${short} resumed.`);
  await expect(row.locator('.status')).toHaveText('active');

  await row.getByRole('link', { name: 'Delete…' }).click();
  await expect(page.getByRole('heading', { name: `Delete schedule ${short} for good?` })).toBeVisible();
  await expect(page.locator('.facts')).toContainText('Check the build queue');
  await page.getByLabel(`Type ${short} to confirm`).fill('yes');
  await page.getByRole('button', { name: 'Delete permanently' }).click();
  await expect(page.locator('#confirm-error')).toContainText(`type ${short}`);
  await shot('schedule-delete');
  await page.getByLabel(`Type ${short} to confirm`).fill(short);
  await page.getByRole('button', { name: 'Delete permanently' }).click();
  await expect(page.getByRole('status')).toHaveText(`Schedule ${short} deleted for good.`);
  await expect(page.locator(`#schedule-${job.id}`)).toHaveCount(0);
  await expect(page.locator('#schedules')).toContainText('Send the morning report');
  expect((await page.request.get(`/api/schedules/${job.id}`, api)).status()).toBe(404);
});

test('the layout works on a phone', async ({ browser }) => {
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, storageState: await page.context().storageState() });
  const small = await phone.newPage();
  await small.goto('/tools');
  const overflow = await small.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
  await small.screenshot({ path: `${shots}/tools-phone.png` });
  await phone.close();
});

test('no page broke the Content-Security-Policy', async () => {
  expect(cspViolations).toEqual([]);
});
