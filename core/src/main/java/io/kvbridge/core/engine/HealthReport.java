package io.kvbridge.core.engine;

/**
 * What a rank's worker tells a health probe, read on the worker thread.
 *
 * @param retainedHandles handles whose release failed and is retried.
 * @param retainedHandleIds the first few of them, in hex.
 * @param oldestRetainedAgeNanos how long ago the oldest of them was posted; 0 when none.
 * @param answeredAtNanos {@link System#nanoTime()} when the worker answered.
 */
record HealthReport(int retainedHandles, String retainedHandleIds, long oldestRetainedAgeNanos, long answeredAtNanos)
{
}
