#!/usr/bin/env node
import { main } from './cli/program.js';

process.exitCode = await main(process.argv);
