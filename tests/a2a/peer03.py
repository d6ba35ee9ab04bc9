"""A2A 0.3 peers built with the official Python SDK at its last 0.3 release (PyPI `a2a-sdk`
0.3.26, in its own virtual environment: target/a2a-0.3-venv), for Kennel's interop tests.
Each client command prints one JSON object on stdout.

    python peer03.py serve PORT       an SDK 0.3 server whose agent answers "echo: <text>"
    python peer03.py send BASE TEXT [--stream] [--no-wait]
                                      message/send (blocking, or not) or message/stream: the
                                      answer's text, the kinds of the events seen, the state
    python peer03.py get BASE ID      tasks/get
    python peer03.py cancel BASE ID   tasks/cancel
    python peer03.py resubscribe BASE ID   tasks/resubscribe: the kinds of the events, the state

BASE is where the agent card is. `--token T` sends `Authorization: Bearer T`. An error
prints {"error": ..., "code": ...} and exits 1.
"""

import argparse
import asyncio
import contextlib
import json
import sys

import httpx
import uvicorn

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory, create_text_message_object
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities, AgentCard, AgentSkill, Message, Part, Role, Task, TaskIdParams, TaskQueryParams, TaskState,
    TextPart,
)
from a2a.utils import new_task


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task or new_task(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        await updater.add_artifact([Part(root=TextPart(text=f"echo: {context.get_user_input()}"))], name="echo")
        await updater.update_status(TaskState.completed, final=True)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def serve(port: int) -> None:
    card = AgentCard(
        name="python-echo-0.3",
        description="Echoes what it is sent (a2a-sdk 0.3 test peer).",
        url=f"http://127.0.0.1:{port}/a2a",
        version="0.3.26",
        protocol_version="0.3.0",
        preferred_transport="JSONRPC",
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        capabilities=AgentCapabilities(streaming=True),
        skills=[AgentSkill(id="echo", name="Echo", description="Repeats the message", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build(rpc_url="/a2a")
    print(f"a2a 0.3 peer listening on http://127.0.0.1:{port}", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def text_of(obj) -> str:
    parts = obj.parts if isinstance(obj, Message) else [p for a in obj.artifacts or [] for p in a.parts]
    return "\n".join(p.root.text for p in parts if isinstance(p.root, TextPart))


@contextlib.asynccontextmanager
async def client_for(args, streaming: bool, polling: bool = False):
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        card = await A2ACardResolver(http, args.base).get_agent_card()
        yield ClientFactory(ClientConfig(streaming=streaming, polling=polling, httpx_client=http)).create(card)


async def follow(events) -> dict:
    kinds, task = [], None
    async for item in events:
        if isinstance(item, Message):
            return {"kinds": ["message"], "state": None, "text": text_of(item), "task_id": None}
        task, update = item
        kinds.append(update.kind if update is not None else "task")
    return {"kinds": kinds, "state": task.status.state.value, "text": text_of(task), "task_id": task.id}


async def send(args) -> dict:
    async with client_for(args, streaming=args.stream, polling=args.no_wait) as client:
        return await follow(client.send_message(create_text_message_object(role=Role.user, content=args.text)))


def task_json(task: Task) -> dict:
    return json.loads(task.model_dump_json(exclude_none=True, by_alias=True))


async def get(args) -> dict:
    async with client_for(args, streaming=False) as client:
        return task_json(await client.get_task(TaskQueryParams(id=args.id)))


async def cancel(args) -> dict:
    async with client_for(args, streaming=False) as client:
        return task_json(await client.cancel_task(TaskIdParams(id=args.id)))


async def resubscribe(args) -> dict:
    async with client_for(args, streaming=True) as client:
        return await follow(client.resubscribe(TaskIdParams(id=args.id)))


def main() -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve").add_argument("port", type=int)
    for name, extra in [("send", ["text"]), ("get", ["id"]), ("cancel", ["id"]), ("resubscribe", ["id"])]:
        command = commands.add_parser(name)
        command.add_argument("base")
        for arg in extra:
            command.add_argument(arg)
        command.add_argument("--token")
        command.add_argument("--stream", action="store_true")
        command.add_argument("--no-wait", action="store_true")
    args = parser.parse_args()
    if args.command == "serve":
        serve(args.port)
        return
    run = {"send": send, "get": get, "cancel": cancel, "resubscribe": resubscribe}
    try:
        print(json.dumps(asyncio.run(run[args.command](args))), flush=True)
    except Exception as e:  # the test reads what went wrong
        error = getattr(e, "error", None)
        print(json.dumps({"error": str(e), "type": type(e).__name__, "code": getattr(error, "code", None)}), flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
