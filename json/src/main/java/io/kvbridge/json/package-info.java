/**
 * {@link io.kvbridge.json.TransferParamsJson}: {@link io.kvbridge.api.TransferParams} as the JSON
 * object a router carries from the prefill engine to the decode engine.
 */
package io.kvbridge.json;
