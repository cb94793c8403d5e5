package io.rollcount.job.util;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks state that one thread alone reads and writes: the I/O thread of its owner (the Redis sink writer's
 * {@code redis-writer-io-N}), which needs no lock for it. State that another thread reads as well is not
 * marked: it is {@code volatile}, atomic or concurrent, and its comment says which threads share it. A
 * documentation marker in the manner of {@code @GuardedBy}; nothing checks it.
 */
@Documented
@Retention(RetentionPolicy.CLASS)
@Target({ElementType.FIELD, ElementType.METHOD})
public @interface IoThreadOnly {}
