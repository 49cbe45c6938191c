package io.kvbridge.layout.hma;

/** The hma layout keeps the whole layout contract. */
final class HmaConformanceTest extends HmaCases
{
}
