package io.kvbridge.spi;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks API that may still change incompatibly before it is declared stable. It says nothing about
 * the quality or performance of what it marks.
 */
@Documented
@Retention(RetentionPolicy.CLASS)
@Target({ElementType.TYPE, ElementType.METHOD, ElementType.CONSTRUCTOR, ElementType.FIELD})
public @interface Experimental
{
    /**
     * Returns the date by which the element is expected to become stable.
     *
     * @return an ISO date such as {@code 2027-03-01}.
     */
    String eta();
}
