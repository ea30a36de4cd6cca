// The TypeScript SDK as a victim: a long-lived Node 24 process that reads one request per stdin
// line and reports, on one stdout line, what the SDK's real StreamableHTTPClientTransport parsed
// from the gateway's answer (undici fetch: content codings, UTF-8 with the BOM stripped, charset
// ignored; TextDecoderStream + eventsource-parser for SSE; response.json() for JSON).
//
//   node ts_victim.mjs <path to node_modules/@modelcontextprotocol/sdk>
//   stdin:  {"n": 1, "url": "...", "sessionId": "gs1..." | null, "protocolVersion": "..." | null,
//            "modern": true | false, "message": {JSON-RPC request}, "get": false}
//   ("get": true opens the standalone GET stream instead of POSTing "message")
//   stdout: {"n": 1, "messages": [...], "errors": [...], "next400": [...]}
//
// "next400" is what the newer SDK (modelcontextprotocol/typescript-sdk main,
// packages/client/src/client/streamableHttp.ts) additionally parses: for a modern-era request,
// any 400 body read with response.text(), JSON.parse, JSONRPCMessageSchema, kept when it is an
// error response with the request's id. It is computed here with the installed SDK's own schema
// on a clone of the same undici response.
import readline from 'node:readline';
import { pathToFileURL } from 'node:url';

const sdk = process.argv[2];
const { StreamableHTTPClientTransport } = await import(
    pathToFileURL(`${sdk}/dist/esm/client/streamableHttp.js`).href
);
const { JSONRPCMessageSchema, isJSONRPCErrorResponse } = await import(
    pathToFileURL(`${sdk}/dist/esm/types.js`).href
);

const tick = () => new Promise(resolve => setTimeout(resolve, 1));

async function one(cmd) {
    const messages = [];
    const errors = [];
    const next400 = [];
    const bodies = [];
    const trackingFetch = async (url, init) => {
        const response = await fetch(url, init);
        if (response.status === 400 && cmd.modern && init?.method === 'POST') {
            try {
                const text = await response.clone().text();
                const parsed = JSONRPCMessageSchema.parse(JSON.parse(text));
                if (isJSONRPCErrorResponse(parsed) && parsed.id === cmd.message.id) {
                    next400.push(parsed);
                }
            } catch {
                // not a JSON-RPC error body: the newer SDK throws an SdkHttpError instead
            }
        }
        if (!response.body) {
            return response;
        }
        // Pass the body through unchanged, only to learn when the SDK has read all of it.
        const pass = new TransformStream();
        bodies.push(response.body.pipeTo(pass.writable).then(
            () => undefined,
            () => undefined
        ));
        return new Response(pass.readable, {
            status: response.status,
            statusText: response.statusText,
            headers: response.headers
        });
    };
    const transport = new StreamableHTTPClientTransport(new URL(cmd.url), {
        sessionId: cmd.sessionId ?? undefined,
        fetch: trackingFetch,
        reconnectionOptions: {
            initialReconnectionDelay: 1,
            maxReconnectionDelay: 1,
            reconnectionDelayGrowFactor: 1,
            maxRetries: 0
        }
    });
    transport.onmessage = message => messages.push(message);
    transport.onerror = error => errors.push(String(error?.message ?? error));
    await transport.start();
    if (cmd.protocolVersion) {
        transport.setProtocolVersion(cmd.protocolVersion);
    }
    try {
        if (cmd.get) {
            // the handshake-era standalone GET stream, as the SDK opens it after `initialized`
            await transport.resumeStream(undefined);
        } else {
            await transport.send(cmd.message);
        }
    } catch (error) {
        errors.push(String(error?.message ?? error));
    }
    let seen = -1;
    while (seen !== bodies.length) {
        seen = bodies.length;
        await Promise.all(bodies);
        await tick();
        await tick();
    }
    await transport.close();
    return { n: cmd.n, messages, errors, next400 };
}

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
    if (!line.trim()) {
        continue;
    }
    const cmd = JSON.parse(line);
    let out;
    try {
        out = await one(cmd);
    } catch (error) {
        out = { n: cmd.n, messages: [], errors: [`victim crashed: ${error}`], next400: [] };
    }
    process.stdout.write(JSON.stringify(out) + '\n');
}
