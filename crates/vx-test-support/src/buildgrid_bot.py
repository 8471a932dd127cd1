#!/usr/bin/env python3
"""A BuildGrid worker for vx's tests (REM-15): BuildGrid schedules actions but runs none; this
bot takes leases over the Remote Workers API (v1test2 Bots) and hands each action to
`buildbox-run`, which fetches its inputs from BuildGrid's CAS, runs it in bubblewrap and uploads
its outputs. It follows ../shared/REMOTE.md section 4.4:

1. CreateBotSession with a unique bot id and one device carrying the given properties;
2. set every PENDING lease ACTIVE and acknowledge with UpdateBotSession before running;
3. run each ACTIVE lease's action (the payload is an Action or its Digest) with buildbox-run,
   saying so on stderr with the action's platform; while it runs, UpdateBotSession every 2 s keeps
   the session alive, and a lease BuildGrid CANCELLED stops the runner;
4. report: status OK and the ActionResult (its worker named), or INTERNAL with the runner's
   exit code and the tail of its stderr; the lease COMPLETED;
5. UpdateBotSession long-polls for the next work;
6. on SIGTERM or SIGINT, say BOT_TERMINATING before leaving (a bot that vanishes keeps a live
   session until BuildGrid's keepalive timeout).

Runs with the Python of BuildGrid's virtualenv, whose wheel ships the generated protos.
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile

import grpc
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2 as re_pb2
from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2_grpc as re_grpc
from buildgrid._protos.google.devtools.remoteworkers.v1test2 import bots_pb2, bots_pb2_grpc, worker_pb2
from buildgrid._protos.google.rpc import code_pb2

POLL = 5  # seconds a long poll may last (BuildGrid holds it while no work comes): short, so
# that SIGTERM is heard soon, but BuildGrid only waits for work (and assigns it) when 80% of the
# deadline is at least its NETWORK_TIMEOUT of 3 s; below that it answers at once and the bot
# would spin


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--remote", required=True, help="host:port of BuildGrid")
    ap.add_argument("--instance", default="")
    ap.add_argument("--runner", required=True, help="the buildbox-run binary")
    ap.add_argument("--name", default="bot")
    ap.add_argument("--property", action="append", default=[], help="KEY=VALUE of the device")
    ap.add_argument("--bind", action="append", default=[], help="a read-only bind mount, SRC:DST")
    args = ap.parse_args()

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))

    channel = grpc.insecure_channel(args.remote)
    bots = bots_pb2_grpc.BotsStub(channel)
    cas = re_grpc.ContentAddressableStorageStub(channel)
    properties = [worker_pb2.Device.Property(key=k, value=v)
                  for k, v in (p.split("=", 1) for p in args.property)]
    bot_id = f"{socket.gethostname()}-{os.getpid()}-{args.name}"
    session = bots_pb2.BotSession(
        bot_id=bot_id, status=bots_pb2.BotStatus.OK,
        worker=worker_pb2.Worker(devices=[worker_pb2.Device(handle=args.name, properties=properties)]))
    session = bots.CreateBotSession(
        bots_pb2.CreateBotSessionRequest(parent=args.instance, bot_session=session), timeout=POLL)
    print(f"bot {bot_id}: session {session.name}", file=sys.stderr, flush=True)

    def update(timeout: float):
        return bots.UpdateBotSession(
            bots_pb2.UpdateBotSessionRequest(name=session.name, bot_session=session), timeout=timeout)

    def cancelled(current, lease_id: str) -> bool:
        """Keeps the session alive while a lease runs; whether BuildGrid cancelled the lease."""
        try:
            answer = update(0.5)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                raise
            return False
        return any(lease.id == lease_id and lease.state == bots_pb2.LeaseState.CANCELLED
                   for lease in answer.leases)

    while not stopping:
        accepted = False
        for lease in session.leases:
            if lease.state == bots_pb2.LeaseState.PENDING:
                lease.state = bots_pb2.LeaseState.ACTIVE
                accepted = True
        if accepted:
            session = update(40)
        for lease in session.leases:
            if lease.state == bots_pb2.LeaseState.ACTIVE:
                run(lease, args, cas, bot_id, lambda: cancelled(session, lease.id))
        try:
            session = update(POLL)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                raise
    session.status = bots_pb2.BotStatus.BOT_TERMINATING
    try:
        update(5)
    except grpc.RpcError:
        pass


def run(lease, args, cas, bot_id: str, cancelled) -> None:
    """Runs one lease's action and fills in the lease's result."""
    action = re_pb2.Action()
    if lease.payload.Is(re_pb2.Action.DESCRIPTOR):
        lease.payload.Unpack(action)
    else:
        digest = re_pb2.Digest()
        lease.payload.Unpack(digest)
        answer = cas.BatchReadBlobs(re_pb2.BatchReadBlobsRequest(
            instance_name=args.instance, digests=[digest]), timeout=40)
        action.ParseFromString(answer.responses[0].data)
    with tempfile.TemporaryDirectory(prefix="vx-bot-") as work:
        action_path = os.path.join(work, "action.bin")
        result_path = os.path.join(work, "result.bin")
        with open(action_path, "wb") as f:
            f.write(action.SerializeToString())
        argv = [args.runner, f"--remote=http://{args.remote}", f"--instance={args.instance}",
                "--disable-localcas", f"--action={action_path}", f"--action-result={result_path}",
                f"--workspace-path={work}", "--log-level=warning"]
        argv += [f"--bind-mount={b}" for b in args.bind]
        platform = ",".join(f"{p.name}={p.value}" for p in action.platform.properties)
        print(f"bot {bot_id}: running an action on {platform}", file=sys.stderr, flush=True)
        with tempfile.TemporaryFile() as err:
            runner = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
            while True:
                try:
                    runner.wait(timeout=2)
                    break
                except subprocess.TimeoutExpired:
                    if cancelled():
                        print(f"bot {bot_id}: cancelled", file=sys.stderr, flush=True)
                        runner.terminate()
                        runner.wait()
                        lease.state = bots_pb2.LeaseState.CANCELLED
                        return
            err.seek(0)
            stderr = err.read()
        if runner.returncode == 0 and os.path.exists(result_path):
            result = re_pb2.ActionResult()
            with open(result_path, "rb") as f:
                result.ParseFromString(f.read())
            result.execution_metadata.worker = bot_id
            lease.result.Pack(result)
            lease.status.code = code_pb2.OK
        else:
            lease.status.code = code_pb2.INTERNAL
            lease.status.message = (f"buildbox-run exited {runner.returncode}: "
                                    + stderr.decode(errors="replace")[-2000:])
    lease.state = bots_pb2.LeaseState.COMPLETED


if __name__ == "__main__":
    main()
