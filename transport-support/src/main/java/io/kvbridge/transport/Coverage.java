package io.kvbridge.transport;

/**
 * Which registration each descriptor of a list lies in: {@code registrationIds[i]} indexes
 * {@code registrations}, the distinct registrations in order of first use. A transport keeps both
 * in its prepared list: the ids keep coalesced runs inside one registration, the registrations say
 * whether the list is still usable.
 *
 * @param registrationIds per descriptor, an index into {@code registrations}.
 * @param registrations the registrations the descriptors lie in.
 */
public record Coverage(int[] registrationIds, Registration[] registrations)
{
}
