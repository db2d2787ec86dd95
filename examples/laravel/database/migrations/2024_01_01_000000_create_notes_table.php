<?php

use Illuminate\Database\Migrations\Migration;
use Illuminate\Database\Schema\Blueprint;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\Schema;

class CreateNotesTable extends Migration
{
    public function up(): void
    {
        Schema::create('notes', function (Blueprint $table) {
            $table->id();
            $table->string('author');
            $table->text('body');
        });
        DB::table('notes')->insert(['author' => 'seed', 'body' => 'in the template']);
    }

    public function down(): void
    {
        Schema::dropIfExists('notes');
    }
}
