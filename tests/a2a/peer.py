"""A2A 1.0 peers built with the official Python SDK (PyPI `a2a-sdk` 1.3.0), for Kennel's
interop tests. Each client command prints one JSON object on stdout.

    python3 peer.py serve PORT        an SDK A2A server whose agent answers "echo: <text>"
    python3 peer.py send BASE TEXT [--stream]   SendMessage (or SendStreamingMessage): the
                                      answer's text, the kinds of the events seen, the state
    python3 peer.py poll BASE TEXT    SendMessage with returnImmediately, then GetTask until
                                      the task ends: every state seen
    python3 peer.py get BASE ID [--history N]   GetTask
    python3 peer.py list BASE [--page-size N] [--page-token T] [--context C] [--status S]
                                      [--history N] [--artifacts]   ListTasks
    python3 peer.py cancel BASE ID    CancelTask
    python3 peer.py subscribe BASE ID SubscribeToTask: the kinds of the events, the state

BASE is where the agent card is (BASE/.well-known/agent-card.json). `--token T` (any client
command) sends `Authorization: Bearer T`. An error prints {"error": ..., "code": ...} and
exits 1.
"""

import argparse
import asyncio
import contextlib
import json
import sys

import httpx
import uvicorn
from google.protobuf.json_format import MessageToDict
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


def task_text(task: pb.Task) -> str:
    texts = [p.text for a in task.artifacts for p in a.parts if p.text]
    if not texts and task.status.message.parts:
        texts.append(get_message_text(task.status.message))
    return "\n".join(texts)


@contextlib.asynccontextmanager
async def client_for(args, streaming: bool):
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        yield await ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create_from_url(args.base)


def state_name(state) -> str:
    return pb.TaskState.Name(state)


async def follow(stream) -> dict:
    """Reads a stream of StreamResponse to its end: the kinds seen, the last state, the text of
    the artifacts as the spec builds them (`append` adds to an artifact, otherwise it is
    replaced), and the text of the pieces streamed before the last chunk."""
    kinds, state, texts, task_id = [], None, [], None
    artifacts, pieces = {}, []
    async for response in stream:
        kind = response.WhichOneof("payload")
        kinds.append(kind)
        if kind == "task":
            state, task_id = state_name(response.task.status.state), response.task.id
        elif kind == "status_update":
            state, task_id = state_name(response.status_update.status.state), response.status_update.task_id
        elif kind == "artifact_update":
            update = response.artifact_update
            text = "".join(p.text for p in update.artifact.parts if p.text)
            if not update.last_chunk:
                pieces.append(text)
            artifact = update.artifact.artifact_id
            artifacts[artifact] = artifacts.get(artifact, "") + text if update.append else text
        elif kind == "message":
            texts.append(get_message_text(response.message))
    texts.extend(artifacts.values())
    return {"kinds": kinds, "state": state, "text": "\n".join(texts), "task_id": task_id, "pieces": pieces}


async def send(args) -> dict:
    async with client_for(args, streaming=args.stream) as client:
        request = pb.SendMessageRequest(message=new_text_message(args.text, role=pb.Role.ROLE_USER))
        if not args.stream:
            responses = [r async for r in client.send_message(request)]
            task = responses[0].task
            return {"kinds": ["task"], "state": state_name(task.status.state), "text": task_text(task), "task_id": task.id}
        return await follow(client.send_message(request))


async def poll(args) -> dict:
    async with client_for(args, streaming=False) as client:
        request = pb.SendMessageRequest(
            message=new_text_message(args.text, role=pb.Role.ROLE_USER),
            configuration=pb.SendMessageConfiguration(return_immediately=True),
        )
        task = [r async for r in client.send_message(request)][0].task
        states = [state_name(task.status.state)]
        while task.status.state not in (pb.TaskState.TASK_STATE_COMPLETED, pb.TaskState.TASK_STATE_FAILED, pb.TaskState.TASK_STATE_CANCELED):
            await asyncio.sleep(0.05)
            task = await client.get_task(pb.GetTaskRequest(id=task.id))
            if state_name(task.status.state) != states[-1]:
                states.append(state_name(task.status.state))
        return {"states": states, "text": task_text(task), "task_id": task.id}


async def get(args) -> dict:
    async with client_for(args, streaming=False) as client:
        request = pb.GetTaskRequest(id=args.id)
        if args.history is not None:
            request.history_length = args.history
        return MessageToDict(await client.get_task(request))


async def list_tasks(args) -> dict:
    async with client_for(args, streaming=False) as client:
        request = pb.ListTasksRequest(include_artifacts=args.artifacts)
        if args.page_size:
            request.page_size = args.page_size
        if args.page_token:
            request.page_token = args.page_token
        if args.context:
            request.context_id = args.context
        if args.status:
            request.status = pb.TaskState.Value(args.status)
        if args.history is not None:
            request.history_length = args.history
        return MessageToDict(await client.list_tasks(request), always_print_fields_with_no_presence=True)


async def cancel(args) -> dict:
    async with client_for(args, streaming=False) as client:
        return MessageToDict(await client.cancel_task(pb.CancelTaskRequest(id=args.id)))


async def subscribe(args) -> dict:
    async with client_for(args, streaming=True) as client:
        return await follow(client.subscribe(pb.SubscribeToTaskRequest(id=args.id)))


def main() -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve").add_argument("port", type=int)
    for name, extra in [("send", ["text"]), ("poll", ["text"]), ("get", ["id"]), ("list", []), ("cancel", ["id"]), ("subscribe", ["id"])]:
        command = commands.add_parser(name)
        command.add_argument("base")
        for arg in extra:
            command.add_argument(arg)
        command.add_argument("--token")
        command.add_argument("--stream", action="store_true")
        command.add_argument("--history", type=int)
        command.add_argument("--page-size", type=int, default=0)
        command.add_argument("--page-token")
        command.add_argument("--context")
        command.add_argument("--status")
        command.add_argument("--artifacts", action="store_true")
    args = parser.parse_args()
    if args.command == "serve":
        serve(args.port)
        return
    run = {"send": send, "poll": poll, "get": get, "list": list_tasks, "cancel": cancel, "subscribe": subscribe}
    try:
        print(json.dumps(asyncio.run(run[args.command](args))), flush=True)
    except Exception as e:  # the test reads what went wrong
        print(json.dumps({"error": str(e), "type": type(e).__name__, "code": getattr(e, "code", None)}), flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
