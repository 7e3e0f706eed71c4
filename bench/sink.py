"""The webhook benchmark's ``K_SINK``: a broker's ingress reduced to what the function sees of it,
an HTTP/1.1 server that answers every request ``202`` at once, on kept-alive connections.

A real broker runs in other pods (Knative's is Go); here it shares the machine's cores with the
function under test, so it must cost as little CPU as possible, or its CPU would be counted in
the function's latency. It counts the CloudEvents it accepted (``ce-type``), so the benchmark can
check that every new sync event was sent. Run it as ``python -m bench.sink``: it prints
``listening on http://127.0.0.1:PORT``, and ``GET /count`` answers the number of events so far.
"""

from __future__ import annotations

import argparse
import asyncio

ACCEPTED = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
events = 0


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    global events
    try:
        while head := await reader.readuntil(b"\r\n\r\n"):
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length:
                await reader.readexactly(length)
            if head.startswith(b"GET /count"):
                body = str(events).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            else:
                events += b"\r\nce-type:" in head.lower()
                writer.write(ACCEPTED)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(serve, "127.0.0.1", port, backlog=1024)
    print(f"listening on http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    asyncio.run(main(parser.parse_args().port))
