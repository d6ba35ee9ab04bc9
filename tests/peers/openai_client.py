"""A client of Kennel's OpenAI-compatible endpoint on the official `openai` Python package.

    python openai_client.py BASE_URL TOKEN MODEL HIDDEN_MODEL

Lists the models, asks MODEL once without streaming and once streaming (with usage), goes on
with the first conversation as a chat front end does (resending it), asks HIDDEN_MODEL, and
uses a wrong key; prints one JSON object with what the client made of each answer.
"""

import json
import sys

import openai

base_url, token, model, hidden = sys.argv[1:5]
client = openai.OpenAI(base_url=base_url, api_key=token, max_retries=0, timeout=60)
out = {}

out["models"] = [m.id for m in client.models.list()]

first = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What time is it?"},
]
raw = client.chat.completions.with_raw_response.create(model=model, messages=first, user="ann")
completion = raw.parse()
out["plain"] = {
    "session": raw.headers.get("x-kennel-session"),
    "object": completion.object,
    "model": completion.model,
    "content": completion.choices[0].message.content,
    "role": completion.choices[0].message.role,
    "finish_reason": completion.choices[0].finish_reason,
    "usage": completion.usage.model_dump() if completion.usage else None,
}

chunks = []
stream = client.chat.completions.create(
    model=model,
    messages=[{"role": "user", "content": [{"type": "text", "text": "Tell me a story."}]}],
    stream=True,
    stream_options={"include_usage": True},
)
for chunk in stream:
    chunks.append(chunk.model_dump())
out["streamed"] = {
    "roles": [c["choices"][0]["delta"].get("role") for c in chunks if c["choices"]],
    "content": "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]),
    "pieces": sum(1 for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")),
    "finish_reasons": [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]],
    "usage": [c["usage"] for c in chunks if c.get("usage")],
    "ids": sorted({c["id"] for c in chunks}),
    "objects": sorted({c["object"] for c in chunks}),
}

later = first + [
    {"role": "assistant", "content": completion.choices[0].message.content},
    {"role": "user", "content": "And tomorrow?"},
]
raw = client.chat.completions.with_raw_response.create(model=model, messages=later, user="ann")
out["continued"] = {"session": raw.headers.get("x-kennel-session"), "content": raw.parse().choices[0].message.content}


def refusal(call):
    try:
        call()
    except openai.APIStatusError as e:
        return {"class": type(e).__name__, "status": e.status_code, "code": e.code, "type": e.type, "message": e.message}
    return {"class": None}


out["hidden"] = refusal(lambda: client.chat.completions.create(model=hidden, messages=first))
out["hidden_model"] = refusal(lambda: client.models.retrieve(hidden))
wrong = openai.OpenAI(base_url=base_url, api_key="kn_" + "0" * 64, max_retries=0)
out["wrong_key"] = refusal(lambda: wrong.models.list())
out["no_user_message"] = refusal(
    lambda: client.chat.completions.create(model=model, messages=[{"role": "assistant", "content": "hi"}])
)

print(json.dumps(out))
