#!/usr/bin/env node
import { runServeCli } from './cli.js';

process.exitCode = await runServeCli(process.argv.slice(2));
