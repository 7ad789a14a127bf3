/**
 * turnback/langchain — turnback inside LangChain JS agents (`langchain` 1.x is an optional peer
 * dependency, needed only by this entry): {@link checkpointMiddleware}, one `wrapToolCall`
 * middleware that covers every tool of an agent.
 *
 * @packageDocumentation
 */
export { checkpointMiddleware, type CheckpointMiddlewareOptions } from './adapters/langchain.js';
