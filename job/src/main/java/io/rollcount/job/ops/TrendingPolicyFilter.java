package io.rollcount.job.ops;

import io.rollcount.job.model.PartialSum;
import io.rollcount.job.policy.Policies;
import org.apache.flink.api.common.functions.FilterFunction;

/** Only the partial sums of counters whose namespace feeds trending lists ({@code trending} of {@code --policies}). */
public final class TrendingPolicyFilter implements FilterFunction<PartialSum> {
    private static final long serialVersionUID = 1L;

    private final Policies policies;

    public TrendingPolicyFilter(Policies policies) {
        this.policies = policies;
    }

    @Override
    public boolean filter(PartialSum p) {
        return policies.forCounter(p.counter).trending();
    }
}
