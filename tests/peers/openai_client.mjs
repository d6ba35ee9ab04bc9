// A client of Kennel's OpenAI-compatible endpoint on the official `openai` npm package.
//
//     node openai_client.mjs BASE_URL TOKEN MODEL HIDDEN_MODEL
//
// Does what openai_client.py does, in the same order, and prints the same JSON object: the
// two clients' answers are checked by one test.

import OpenAI from 'openai';

const [baseURL, token, model, hidden] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: token, maxRetries: 0, timeout: 60_000 });
const out = {};

out.models = [];
for await (const m of client.models.list()) out.models.push(m.id);

const first = [
  { role: 'system', content: 'You are a helpful assistant.' },
  { role: 'user', content: 'What time is it?' },
];
let { data: completion, response } = await client.chat.completions
  .create({ model, messages: first, user: 'ann' })
  .withResponse();
out.plain = {
  session: response.headers.get('x-kennel-session'),
  object: completion.object,
  model: completion.model,
  content: completion.choices[0].message.content,
  role: completion.choices[0].message.role,
  finish_reason: completion.choices[0].finish_reason,
  usage: completion.usage ?? null,
};

const chunks = [];
const stream = await client.chat.completions.create({
  model,
  messages: [{ role: 'user', content: [{ type: 'text', text: 'Tell me a story.' }] }],
  stream: true,
  stream_options: { include_usage: true },
});
for await (const chunk of stream) chunks.push(chunk);
const withChoice = chunks.filter((c) => c.choices.length > 0);
out.streamed = {
  roles: withChoice.map((c) => c.choices[0].delta.role ?? null),
  content: withChoice.map((c) => c.choices[0].delta.content ?? '').join(''),
  pieces: withChoice.filter((c) => c.choices[0].delta.content).length,
  finish_reasons: withChoice.map((c) => c.choices[0].finish_reason ?? null),
  usage: chunks.filter((c) => c.usage).map((c) => c.usage),
  ids: [...new Set(chunks.map((c) => c.id))].sort(),
  objects: [...new Set(chunks.map((c) => c.object))].sort(),
};

const later = [
  ...first,
  { role: 'assistant', content: completion.choices[0].message.content },
  { role: 'user', content: 'And tomorrow?' },
];
({ data: completion, response } = await client.chat.completions
  .create({ model, messages: later, user: 'ann' })
  .withResponse());
out.continued = { session: response.headers.get('x-kennel-session'), content: completion.choices[0].message.content };

async function refusal(call) {
  try {
    await call();
  } catch (e) {
    if (!(e instanceof OpenAI.APIError)) throw e;
    return { class: e.constructor.name, status: e.status, code: e.code, type: e.type, message: e.error?.message };
  }
  return { class: null };
}

out.hidden = await refusal(() => client.chat.completions.create({ model: hidden, messages: first }));
out.hidden_model = await refusal(() => client.models.retrieve(hidden));
const wrong = new OpenAI({ baseURL, apiKey: 'kn_' + '0'.repeat(64), maxRetries: 0 });
out.wrong_key = await refusal(() => wrong.models.list());
out.no_user_message = await refusal(() =>
  client.chat.completions.create({ model, messages: [{ role: 'assistant', content: 'hi' }] }),
);

console.log(JSON.stringify(out));
