<?php

declare(strict_types=1);

namespace Pristine\Laravel;

use Illuminate\Contracts\Events\Dispatcher;
use Illuminate\Database\Console\Migrations\FreshCommand;
use Illuminate\Database\Events\DatabaseRefreshed;

/**
 * `migrate:fresh` in a pristine worker: Laravel's FreshCommand (8.x) step
 * by step, with its wipe and schema build replaced by a database in the
 * template's state (PristineParallelTesting::fresh). `migrate` still runs
 * (on the migrated lease it finds nothing pending, and says so through its
 * own output and events), then the DatabaseRefreshed event and the seeders
 * (--seed, --seeder), as Laravel runs them. Outside a worker holding leases
 * it is Laravel's own command.
 */
final class PristineFreshCommand extends FreshCommand
{
    public function handle()
    {
        if (!PristineParallelTesting::active()) {
            return parent::handle();
        }
        if (!$this->confirmToProceed()) {
            return 1;
        }
        $database = $this->input->getOption('database');
        PristineParallelTesting::fresh($database);
        $this->call('migrate', array_filter([
            '--database' => $database,
            '--path' => $this->input->getOption('path'),
            '--realpath' => $this->input->getOption('realpath'),
            '--schema-path' => $this->input->getOption('schema-path'),
            '--force' => true,
            '--step' => $this->option('step'),
        ]));
        if ($this->laravel->bound(Dispatcher::class)) {
            $this->laravel[Dispatcher::class]->dispatch(new DatabaseRefreshed());
        }
        if ($this->needsSeeding()) {
            $this->runSeeder($database);
        }
        return 0;
    }
}
