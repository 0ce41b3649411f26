#!/usr/bin/env node
import { runMcpCli } from './stdio.js';

process.exitCode = await runMcpCli(process.argv.slice(2));
// stdin may hold the event loop open after the store closed.
process.exit();
