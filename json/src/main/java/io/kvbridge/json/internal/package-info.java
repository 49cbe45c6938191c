/**
 * The JSON machinery under {@link io.kvbridge.json.TransferParamsJson}, for kvbridge's own modules
 * only: {@link io.kvbridge.json.internal.JsonReader} (strict and bounded, on jackson-core's streaming
 * parser), {@link io.kvbridge.json.internal.JsonFields} (typed access collecting every problem) and
 * {@link io.kvbridge.json.internal.JsonWriter} (Python's {@code json.dumps} byte for byte, which
 * the compatibility hash depends on). Core reads its configuration document and writes its hashes
 * with them. Not API: on the module path the package is exported to {@code io.kvbridge.core} only;
 * on the class path, where no module boundary holds, it is visible but may change in any release.
 */
package io.kvbridge.json.internal;
