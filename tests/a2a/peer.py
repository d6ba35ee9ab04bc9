"""A2A peers built with the official Python SDK (PyPI `a2a-sdk`), for Kennel's interop tests.

    python3 peer.py serve PORT              an SDK A2A server whose agent answers "echo: <text>"
    python3 peer.py send CARD_BASE_URL TEXT [TOKEN]
                                            the SDK client: resolves the agent card, sends one
                                            message, prints the answer's text (JSON on stdout)
"""

import asyncio
import json
import sys

import httpx
import uvicorn
from starlette.applications import Starlette

from a2a.client import ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import get_message_text, new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2 as pb


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = get_message_text(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        await updater.add_artifact([pb.Part(text=f"echo: {text}")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def serve(port: int) -> None:
    url = f"http://127.0.0.1:{port}"
    card = pb.AgentCard(
        name="python-echo",
        description="Echoes what it is sent (a2a-sdk test peer).",
        version="1.0.0",
        supported_interfaces=[pb.AgentInterface(url=f"{url}/a2a", protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=pb.AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[pb.AgentSkill(id="echo", name="Echo", description="Repeats the message", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/a2a")
    print(f"a2a peer listening on {url}", flush=True)
    uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=port, log_level="warning")


def answer_text(result) -> str:
    """The text of whatever the SDK client yielded: a message, or a task with artifacts."""
    texts = []
    for item in result:
        obj = item[0] if isinstance(item, tuple) else item
        if isinstance(obj, pb.StreamResponse):
            which = obj.WhichOneof("payload")
            obj = getattr(obj, which) if which else obj
        if isinstance(obj, pb.Message):
            texts.append(get_message_text(obj))
        elif isinstance(obj, pb.Task):
            for artifact in obj.artifacts:
                texts.extend(p.text for p in artifact.parts if p.text)
            if obj.status.message.parts:
                texts.append(get_message_text(obj.status.message))
    return "\n".join(t for t in texts if t)


async def send(base: str, text: str, token: str | None) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        client = await ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create_from_url(base)
        message = new_text_message(text, role=pb.Role.ROLE_USER)
        results = [r async for r in client.send_message(pb.SendMessageRequest(message=message))]
        print(json.dumps({"text": answer_text(results)}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    else:
        asyncio.run(send(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None))
