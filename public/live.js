// Live chat: while a turn runs, show each model call and tool call as it happens, and the
// reply as the model writes it (the finished message replaces it when the page reloads).
// Progressive enhancement only: without this file the chat form posts and the page reloads.
document.addEventListener('submit', (event) => {
  const form = event.target;
  if (!form.dataset.live || typeof EventSource === 'undefined') return;
  event.preventDefault();
  const trace = document.getElementById('live-trace');
  const status = trace.querySelector('.live-status');
  const log = document.getElementById('live-log');
  const button = form.querySelector('button[type=submit]');
  // Each step goes into the folded trace, and the latest one is its summary.
  const line = (text, cls) => {
    const li = document.createElement('li');
    li.textContent = text;
    if (cls) li.className = cls;
    log.appendChild(li);
    status.textContent = text;
    status.className = `live-status ${cls || ''}`;
  };
  trace.hidden = false;
  log.replaceChildren();
  button.disabled = true;
  const events = new EventSource(form.dataset.live);
  // The stream carries every turn of the agent (schedules, other agents, A2A): follow only
  // this chat's session. A new chat's session is the one whose turn starts with this message.
  const sessionField = form.querySelector('input[name=session]');
  let session = sessionField ? sessionField.value : null;
  const typed = (form.querySelector('[name=message]').value || '').replace(/\r\n/g, '\n');
  // The operator's message shows at once as their bubble (the page that follows shows it stored).
  const chatLog = document.querySelector('.chat-log');
  const mine = messageBubble('msg user pending', 'You', typed);
  chatLog.appendChild(mine);
  mine.scrollIntoView({ block: 'nearest' });
  const ours = (d) => d.session_id === session;
  events.addEventListener('turn_started', (e) => {
    const d = JSON.parse(e.data);
    if (session === null && (d.message || '').replace(/\r\n/g, '\n') === typed) session = d.session_id;
    if (ours(d)) offerStop(form, session, line);
  });
  // The reply streams into a bubble of its own; a tool call ends it, so text the model
  // writes after the call starts a new one. Model text is set as text, never as HTML.
  let bubble = null;
  events.addEventListener('text_delta', (e) => {
    const d = JSON.parse(e.data);
    if (!ours(d)) return;
    if (!bubble) {
      const div = messageBubble('msg assistant streaming', 'Agent (writing…)', '');
      bubble = div.querySelector('p');
      chatLog.appendChild(div);
    }
    bubble.textContent += d.text;
  });
  // The provider's stream broke and is read again: what it wrote this time is void.
  events.addEventListener('reply_reset', (e) => {
    if (!ours(JSON.parse(e.data)) || !bubble) return;
    bubble.textContent = '';
  });
  events.addEventListener('compacted', (e) => {
    const d = JSON.parse(e.data);
    if (ours(d)) line(`compacted to fit the context window: ${d.summarised} messages summarised, ${d.stubbed} tool results stubbed`);
  });
  events.addEventListener('queued', (e) => {
    const d = JSON.parse(e.data);
    if (ours(d)) line(`queued: provider ${d.provider} has no free place (max_in_flight)`);
  });
  events.addEventListener('fallback', (e) => {
    const d = JSON.parse(e.data);
    if (ours(d)) line(`${d.from} kept failing: going on with ${d.to}`, 'bad');
  });
  events.addEventListener('model_call', (e) => {
    const d = JSON.parse(e.data);
    if (ours(d)) line(`model call ${d.iteration}…`);
  });
  events.addEventListener('tool_call_started', (e) => {
    const d = JSON.parse(e.data);
    if (!ours(d)) return;
    bubble = null;
    const args = JSON.stringify(d.arguments);
    line(`→ ${d.name} ${args.length > 80 ? `${args.slice(0, 80)}…` : args}`);
  });
  events.addEventListener('tool_call_finished', (e) => {
    const d = JSON.parse(e.data);
    if (!ours(d)) return;
    line(`← ${d.name}: ${d.outcome} (${(d.duration_us / 1000).toFixed(1)} ms)`, d.outcome === 'ok' ? 'ok' : 'bad');
  });
  events.addEventListener('reply', (e) => {
    if (ours(JSON.parse(e.data))) line('reply received', 'ok');
  });
  // ask_user: the turn waits for an answer. The question shows with its choices, as the
  // agent page renders a waiting one; answering it lets the turn go on.
  const asked = [];
  events.addEventListener('question', (e) => {
    const d = JSON.parse(e.data);
    if (!ours(d)) return;
    bubble = null;
    const action = form.action.replace(/\/chat$/, `/questions/${encodeURIComponent(d.question_id)}`);
    const asking = questionForm(action, form.querySelector('input[name=csrf]'), d);
    asked.push(asking);
    document.getElementById('questions').appendChild(asking);
    asking.querySelector('input[name=answer]').focus();
  });
  // A call held for approval: the operator decides here, live, as on the Approvals page.
  events.addEventListener('approval', (e) => {
    const d = JSON.parse(e.data);
    if (!ours(d)) return;
    bubble = null;
    line(`waiting for approval: ${d.tool} (${d.rule})`, 'bad');
    document.getElementById('questions').appendChild(approvalForm(d, form.querySelector('input[name=csrf]')));
  });
  events.addEventListener('tool_call_finished', (e) => {
    const d = JSON.parse(e.data);
    if (d.name && ours(d)) {
      // Decided (here or elsewhere) or timed out: the call's form goes.
      for (const deciding of document.querySelectorAll('form.approval[data-approval]')) {
        if (deciding.dataset.tool === d.name) deciding.remove();
      }
    }
    if (!ours(d) || d.name !== 'ask_user') return;
    // It waited too long: nobody can answer it now (an answered one says what was answered).
    for (const asking of asked.splice(0)) if (asking.dataset.question) asking.remove();
  });
  // The message is sent once: as soon as the stream is open, so no event of its turn is
  // missed; or without it when it cannot open (a session that has ended answers the stream
  // with the sign-in page) or is held back (a proxy that buffers event streams): the reply
  // then comes with the page the post answers, only the live progress is lost.
  let sent = false;
  let unopened = null;
  const send = async () => {
    if (sent) return;
    sent = true;
    clearTimeout(unopened);
    try {
      const response = await fetch(form.action, { method: 'POST', body: new URLSearchParams(new FormData(form)) });
      events.close();
      if (response.status === 403) {
        // Signed out (the session ended or was ended elsewhere): nothing was sent. The draft
        // stays in the field, and comes back after signing in again.
        keepDraft(form);
        mine.remove();
        trace.open = true;
        signedOut(log, await response.text());
        button.disabled = false;
      } else if (response.redirected) {
        window.location.assign(response.url);
      } else {
        document.open();
        document.write(await response.text());
        document.close();
      }
    } catch (err) {
      events.close();
      line(`failed: ${err}`, 'bad');
      button.disabled = false;
    }
  };
  events.onopen = () => {
    events.onopen = null;
    send();
  };
  events.addEventListener('error', () => {
    if (events.readyState === EventSource.CLOSED) send();
  });
  unopened = setTimeout(send, STREAM_OPEN_WAIT_MS);
});

// The chat's Stop button, once the running turn's session is known: it cancels that turn (the
// agent goes on running); the chat's own post then ends and the page shows the session.
function offerStop(form, session, line) {
  const stop = form.querySelector('#chat-stop');
  if (!stop) return;
  stop.hidden = false;
  stop.disabled = false;
  stop.onclick = async () => {
    stop.disabled = true;
    line('stopping the turn…', 'bad');
    const action = form.action.replace(/\/chat$/, `/sessions/${encodeURIComponent(session)}/cancel`);
    const body = new URLSearchParams({ csrf: form.querySelector('input[name=csrf]').value });
    try {
      await fetch(action, { method: 'POST', body, redirect: 'manual' });
    } catch (err) {
      line(`not stopped: ${err}`, 'bad');
      stop.disabled = false;
    }
  };
}

// Picking a session opens it (the picker's Open button does the same without this file).
document.addEventListener('change', (event) => {
  if (event.target.id === 'session-pick') event.target.form.requestSubmit();
});

// A chat message as the page renders one: who, then the text (set as text, never as HTML).
function messageBubble(className, who, text) {
  const div = document.createElement('div');
  div.className = className;
  const label = document.createElement('span');
  label.className = 'who';
  label.textContent = who;
  const p = document.createElement('p');
  p.textContent = text;
  div.append(label, p);
  return div;
}

// How long the chat waits for its event stream to open before it sends without one.
const STREAM_OPEN_WAIT_MS = 5000;

const draftKey = (form) => `kennel-draft:${new URL(form.action).pathname}`;

function keepDraft(form) {
  try {
    sessionStorage.setItem(draftKey(form), form.querySelector('[name=message]').value);
  } catch (_) {
    // Storage refused (a private window's quota): the draft is still in the field.
  }
}

// "Signed out — sign in again", with a link that comes back to this page after the sign-in.
function signedOut(log, said) {
  const li = document.createElement('li');
  li.className = 'bad';
  const link = document.createElement('a');
  link.href = `/login?${new URLSearchParams({ next: window.location.pathname + window.location.search })}`;
  link.textContent = 'sign in again';
  li.append('signed out — ', link, ` (your message is kept; the server said: ${said.trim()})`);
  log.appendChild(li);
}

// A draft kept when the session ended goes back into its chat form once the operator is back.
function restoreDrafts() {
  for (const form of document.querySelectorAll('form[data-live]')) {
    const field = form.querySelector('[name=message]');
    let kept = null;
    try {
      kept = sessionStorage.getItem(draftKey(form));
      sessionStorage.removeItem(draftKey(form));
    } catch (_) {
      return;
    }
    if (kept && field && !field.value) field.value = kept;
  }
}
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', restoreDrafts);
else restoreDrafts();

// A waiting question's form, as `questions_view` renders it; every text is set as text.
function questionForm(action, csrf, d) {
  const el = (tag, props) => Object.assign(document.createElement(tag), props);
  const asking = el('form', { method: 'post', action, className: 'question stack' });
  asking.dataset.question = d.question_id;
  if (csrf) asking.appendChild(csrf.cloneNode());
  const text = el('p', { className: 'question-text' });
  text.append(el('strong', { textContent: 'The agent asks: ' }), d.question);
  const typed = el('div', { className: 'row' });
  typed.append(
    el('input', { type: 'text', name: 'answer', required: true, maxLength: 4000, placeholder: 'Your answer' }),
    el('button', { type: 'submit', textContent: 'Answer' }),
  );
  typed.firstChild.setAttribute('aria-label', 'Your answer');
  const choices = el('div', { className: 'row choices' });
  for (const choice of d.choices || []) {
    choices.appendChild(el('button', { type: 'submit', name: 'choice', value: choice, textContent: choice, formNoValidate: true }));
  }
  asking.append(text, typed, choices);
  return asking;
}

// A held call's decision in the chat: approve once, or deny; the page stays (the turn goes on).
function approvalForm(d, csrf) {
  const el = (tag, props) => Object.assign(document.createElement(tag), props);
  const deciding = el('form', { method: 'post', action: `/approvals/${encodeURIComponent(d.approval_id)}/approve`, className: 'approval question stack' });
  deciding.dataset.approval = d.approval_id;
  deciding.dataset.tool = d.tool;
  if (csrf) deciding.appendChild(csrf.cloneNode());
  const text = el('p', { className: 'question-text' });
  text.append(el('strong', { textContent: `Approve ${d.tool}? ` }), d.reason, ` (rule: ${d.rule}). `);
  const details = el('a', { href: `/approvals#approval-${d.approval_id}`, textContent: 'See its exact arguments' });
  text.append(details);
  const row = el('div', { className: 'row choices' });
  const deny = el('button', { type: 'submit', textContent: 'Deny', className: 'danger', formNoValidate: true });
  deny.formAction = `/approvals/${encodeURIComponent(d.approval_id)}/deny`;
  row.append(el('button', { type: 'submit', textContent: 'Approve once' }), deny);
  deciding.append(text, row);
  return deciding;
}

document.addEventListener('submit', async (event) => {
  const deciding = event.target;
  if (!deciding.dataset || !deciding.dataset.approval) return;
  event.preventDefault();
  const action = (event.submitter && event.submitter.formAction) || deciding.action;
  for (const button of deciding.querySelectorAll('button')) button.disabled = true;
  let note;
  try {
    const response = await fetch(action, { method: 'POST', body: new URLSearchParams(new FormData(deciding)), redirect: 'manual' });
    const done = response.type === 'opaqueredirect' || response.ok;
    const what = action.endsWith('/deny') ? 'denied' : 'approved';
    note = done ? `You ${what} this call.` : `Not decided (${response.status}): it was decided already, or it expired.`;
  } catch (err) {
    note = `Not decided: ${err}`;
  }
  deciding.replaceChildren(Object.assign(document.createElement('p'), { className: 'hint', textContent: note }));
  deciding.removeAttribute('data-approval');
});

// Answering a question stays on the page (a chat turn may be running on it): the form says
// what was answered, or why the answer was refused.
document.addEventListener('submit', async (event) => {
  const asking = event.target;
  if (!asking.dataset || !asking.dataset.question) return;
  event.preventDefault();
  const body = new URLSearchParams(new FormData(asking, event.submitter));
  const answer = body.get('choice') || body.get('answer');
  for (const button of asking.querySelectorAll('button')) button.disabled = true;
  let note;
  try {
    const response = await fetch(asking.action, { method: 'POST', body, redirect: 'manual' });
    const done = response.type === 'opaqueredirect' || response.ok;
    note = done ? `You answered: ${answer}` : `Not answered (${response.status}): it was answered already, or the turn stopped waiting.`;
  } catch (err) {
    note = `Not answered: ${err}`;
  }
  asking.replaceChildren(Object.assign(document.createElement('p'), { className: 'hint', textContent: note }));
  asking.removeAttribute('data-question');
});

// An error page's "Back" link returns to the form (its href, the overview, is the fallback
// without JS). Here and not in an inline handler: the dashboard's CSP allows no inline script.
document.addEventListener('click', (event) => {
  const link = event.target.closest && event.target.closest('a[data-back]');
  if (!link || window.history.length < 2) return;
  event.preventDefault();
  window.history.back();
});

// Live canvas: an agent page shows each new canvas version as it is presented (the version
// list gains its link, the frame loads it). Without this file the page shows the latest on
// reload. Text from the agent (the title) is set as text, never as HTML.
document.addEventListener('DOMContentLoaded', () => {
  const card = document.querySelector('[data-canvas-live]');
  if (!card || typeof EventSource === 'undefined') return;
  const events = new EventSource(card.dataset.canvasLive);
  events.addEventListener('canvas', (e) => {
    const c = JSON.parse(e.data);
    let frame = card.querySelector('iframe.canvas');
    if (!frame) {
      frame = document.createElement('iframe');
      frame.className = 'canvas';
      frame.setAttribute('sandbox', 'allow-scripts');
      frame.setAttribute('referrerpolicy', 'no-referrer');
      card.querySelector('.canvas-live').replaceChildren(frame);
    }
    frame.title = `Canvas v${c.version}: ${c.title}`;
    frame.dataset.version = String(c.version);
    frame.src = c.frame;
    const list = card.querySelector('ol.versions');
    list.querySelectorAll('a[aria-current=page]').forEach((a) => a.setAttribute('aria-current', 'false'));
    const li = document.createElement('li');
    const link = document.createElement('a');
    link.href = c.page;
    link.textContent = `v${c.version} · ${c.title}`;
    link.setAttribute('aria-current', 'page');
    li.appendChild(link);
    list.prepend(li);
  });
});

// Destructive forms ask first: `data-confirm` holds the question. Without JS they post at once.
document.addEventListener('submit', (event) => {
  const question = event.target.dataset && event.target.dataset.confirm;
  if (question && !window.confirm(question)) {
    event.preventDefault();
    event.stopImmediatePropagation();
  }
}, true);

// Ctrl+Enter (Cmd+Enter on a Mac) sends the chat message.
document.addEventListener('keydown', (event) => {
  if (event.key !== 'Enter' || !(event.ctrlKey || event.metaKey)) return;
  const form = event.target.closest && event.target.closest('#chat-form');
  if (!form) return;
  event.preventDefault();
  form.requestSubmit();
});

// A page that follows changes (the task board, schedules, the overview): the server signals
// over `data-live` (server-sent events) when something it shows changed, and its `main` is
// read again from `data-live-url` and swapped in. Never while the operator is using a field
// on it (a field with focus, or one holding what was typed): the change waits until the field
// is left and empty again. Hidden tabs catch up when shown.
// The navigation's unread count follows the inbox on every page, over the same stream (one
// connection per tab: browsers allow only a few per site).
document.addEventListener('DOMContentLoaded', () => {
  const main = document.querySelector('main[data-live]');
  const badge = document.getElementById('unread-count');
  if ((!main && !badge) || typeof EventSource === 'undefined') return;
  const topicsOf = (url) => (new URL(url, window.location.href).searchParams.get('topics') || '').split(',').filter(Boolean);
  const pageTopics = main ? topicsOf(main.dataset.live) : [];
  const followed = badge && !pageTopics.includes('inbox') ? [...pageTopics, 'inbox'] : pageTopics;
  const events = new EventSource(`/live/changes?topics=${followed.join(',')}`);
  events.addEventListener('change', (e) => {
    let changed = followed;
    try { changed = JSON.parse(e.data); } catch (_) { /* an empty signal: everything followed */ }
    if (badge && changed.includes('inbox')) countUnread(badge);
    if (main && changed.some((t) => pageTopics.includes(t))) main.dispatchEvent(new Event('live-change'));
  });
  if (main) followPage(main);
});

async function countUnread(badge) {
  try {
    const response = await fetch('/inbox/unread', { credentials: 'same-origin' });
    if (!response.ok || response.redirected) return;
    const { unread } = await response.json();
    badge.textContent = String(unread);
    badge.setAttribute('aria-label', `${unread} unread`);
    badge.hidden = unread === 0;
  } catch (_) {
    // The next change tries again; the page's own count stays meanwhile.
  }
}

function followPage(main) {
  let stale = false;
  let reading = false;
  // In use: a field has focus, or holds something typed that a swap would lose.
  const typed = () => [...main.querySelectorAll('input, textarea, select')].some((f) =>
    f.type === 'hidden' ? false
      : f.tagName === 'SELECT' ? f.selectedIndex !== Math.max(0, [...f.options].findIndex((o) => o.defaultSelected))
      : (f.type === 'checkbox' || f.type === 'radio') ? f.checked !== f.defaultChecked
      : f.value !== f.defaultValue);
  const busy = () => (main.contains(document.activeElement) && document.activeElement !== main) || typed();
  const refresh = async () => {
    if (!stale || reading || busy() || document.visibilityState !== 'visible') return;
    stale = false;
    reading = true;
    try {
      const response = await fetch(main.dataset.liveUrl, { credentials: 'same-origin' });
      // Sent elsewhere (the session ended: the sign-in page): go there, never swap it in.
      if (response.redirected) { window.location.assign(response.url); return; }
      if (!response.ok) return;
      const fresh = new DOMParser().parseFromString(await response.text(), 'text/html').querySelector('main');
      if (fresh) {
        // The one-time notice the page opened with stays until the operator leaves it.
        const notice = main.querySelector(':scope > .flash');
        main.replaceChildren(...fresh.childNodes);
        if (notice && !main.querySelector(':scope > .flash')) main.prepend(notice);
        main.dataset.refreshed = String(Date.now());
      }
    } finally {
      reading = false;
      if (stale) setTimeout(refresh, 0); // a change that came while reading
    }
  };
  main.addEventListener('live-change', () => { stale = true; refresh(); });
  main.addEventListener('focusout', () => setTimeout(refresh, 0));
  document.addEventListener('visibilitychange', refresh);
}

// The agent-type editor's tool picker: as boxes are ticked or grants typed, each tool's
// standing (and the counts, the summary, the warning) is asked of the daemon again, rendered
// by the same code as the page, and only those parts are copied in: what the operator ticked
// and typed stays as it is. The newest answer wins; one the session ended on is ignored.
document.addEventListener('DOMContentLoaded', () => {
  const picker = document.querySelector('#tool-picker[data-preview]');
  if (!picker) return;
  const form = picker.closest('form');
  const typedGrants = picker.querySelector('input[name=tools]');
  let asked = 0;
  const refresh = async () => {
    const mine = ++asked;
    const query = new URLSearchParams();
    for (const box of picker.querySelectorAll('input[name=grant]:checked')) query.append('grant', box.value);
    query.set('tools', typedGrants.value);
    try {
      const response = await fetch(`${picker.dataset.preview}&${query}`, { credentials: 'same-origin' });
      if (mine !== asked || !response.ok || response.redirected) return;
      const fresh = new DOMParser().parseFromString(await response.text(), 'text/html');
      // Updated in place (children, class, hidden), so the summary's live region is announced.
      for (const part of fresh.querySelectorAll('[data-live-part]')) {
        const here = part.id && document.getElementById(part.id);
        if (!here || !picker.contains(here)) continue;
        here.replaceChildren(...part.childNodes);
        here.className = part.className;
        here.hidden = part.hidden;
      }
      picker.dataset.previewed = String(mine);
    } catch (_) {
      // Offline for a moment: "Preview the tools" still shows the standings.
    }
  };
  picker.addEventListener('change', (event) => { if (event.target.name === 'grant') refresh(); });
  let typing;
  typedGrants.addEventListener('input', () => { clearTimeout(typing); typing = setTimeout(refresh, 300); });
  if (form) form.addEventListener('reset', () => setTimeout(refresh, 0));
});
